package backwave

import (
	"time"

	"github.com/backwave/backwave/store"
)

// QueueRate is a Queue's Rate Limit: at most Limit of its jobs start per
// window of Period, cluster-wide, enforced by the store at claim. Windows
// are fixed, of length Period on the store's clock and aligned to the Unix
// epoch (a one-minute Rate's windows are the clock's minutes), so up to
// 2·Limit jobs may start within one Period that straddles two windows, and
// never more than Limit within a window. Each claim counts, a retry again
// when it starts again. It is neither the Concurrency Limit (how many Run
// at once) nor Backpressure (a node's own pool): a claim takes what all
// three allow. The zero QueueRate is no Rate Limit. Set it with
// Admin.SetQueueRate.
type QueueRate struct {
	// Limit is how many jobs a window starts at most: 1 to 2³¹−1.
	Limit int
	// Period is the window's length: 1ms to 366 days, in whole
	// microseconds.
	Period time.Duration
}

// IsZero reports whether r is no Rate Limit.
func (r QueueRate) IsZero() bool { return r == QueueRate{} }

// String renders the Rate as "N/period", e.g. "100/1m0s", or "none".
func (r QueueRate) String() string { return store.QueueRate(r).String() }

// WindowStart returns the start of the window of r's Period that holds t.
// r must have a Period.
func (r QueueRate) WindowStart(t time.Time) time.Time { return store.QueueRate(r).WindowStart(t) }
