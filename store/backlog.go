package store

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
)

// Backlog is the read an operator alerts on: how far behind each Queue is,
// and what finished lately. Both reads go through an index or the
// maintained counts, never a scan of the whole job table, so they stay
// cheap as the table grows (docs/dashboard.md has the timings).
type Backlog interface {
	// QueueBacklog returns, for every Queue holding Scheduled jobs, how
	// many are ready (Scheduled and due at the store's now) and how many
	// are later (Scheduled, due after now), how many of those Scheduled
	// jobs are Retrying, and the due time of the oldest ready job. Ready
	// and later split the one Scheduled state; they are not states.
	// Ordered by Queue (byte order).
	//
	// The oldest due time is one probe of the due-time index, and the
	// Scheduled total a maintained count. The split is counted off the
	// same index, each side walking at most p.CountCap entries, so one
	// read costs at most two caps' walks per Queue however large the
	// table or the backlog: the smaller side, when it is under the cap,
	// gives both exactly (BacklogFromCounts), and only a Queue with at
	// least the cap on both sides gets a bound (ReadyAtLeast). Retrying
	// is counted the same way (RetryingAtLeast).
	QueueBacklog(ctx context.Context, p BacklogParams) ([]QueueBacklog, error)
	// Throughput counts the jobs that reached a settled state (Succeeded,
	// Dead-Lettered, Cancelled, Quarantined) at or after p.Since, per
	// minute of their finish time and per state, ordered by minute then
	// state. It reads the finish-time index, so its cost grows with the
	// jobs finished in the window. A job purged by retention, or requeued,
	// since it finished is no longer counted.
	Throughput(ctx context.Context, p ThroughputParams) ([]ThroughputBucket, error)
}

// QueueBacklog is one Queue's Scheduled jobs split by due time.
type QueueBacklog struct {
	Queue string
	// Ready is the number of Scheduled jobs due at the store's now; with
	// ReadyAtLeast, a lower bound (the cap).
	Ready int
	// Later is the number of Scheduled jobs due after the store's now:
	// the Scheduled count less Ready (with ReadyAtLeast, an upper bound).
	Later int
	// Retrying is the number of Scheduled jobs carrying a Retry Cause,
	// ready or later (glossary, Retrying); with RetryingAtLeast, a lower
	// bound (the cap).
	Retrying int
	// OldestReady is the due time of the oldest ready job; zero when
	// Ready is 0. The store's now less it is the Queue's latency.
	OldestReady time.Time
	// ReadyAtLeast says both halves held at least the count cap, so
	// Ready is the cap, not an exact count.
	ReadyAtLeast bool
	// RetryingAtLeast says Retrying reached the count cap.
	RetryingAtLeast bool
}

// DefaultBacklogCountCap is the count cap of BacklogParams left zero: a
// read walks at most this many index entries per Queue and count.
const DefaultBacklogCountCap = 100_000

// MaxBacklogCountCap bounds BacklogParams.CountCap.
const MaxBacklogCountCap = 10_000_000

// BacklogParams are the params of Backlog.QueueBacklog.
type BacklogParams struct {
	// CountCap is the most index entries one count walks per Queue; 0 is
	// DefaultBacklogCountCap. At most MaxBacklogCountCap.
	CountCap int
}

// Validate reports params outside the contract.
func (p BacklogParams) Validate() error {
	if p.CountCap < 0 || p.CountCap > MaxBacklogCountCap {
		return fmt.Errorf("%w: backlog count cap %d (want 0 for the default %d, or 1 to %d)", ErrInvalidParams, p.CountCap, DefaultBacklogCountCap, MaxBacklogCountCap)
	}
	return nil
}

// Cap is the count cap the params ask for, the default in place of 0.
func (p BacklogParams) Cap() int {
	if p.CountCap == 0 {
		return DefaultBacklogCountCap
	}
	return p.CountCap
}

// BacklogFromCounts is the one rule that turns a Queue's capped counts into
// its QueueBacklog, for every adapter: scheduled is the Queue's exact
// Scheduled count; ready, later and retrying are counts that stopped at
// limit (each at most limit). A side under the cap is exact and gives the
// other as scheduled less it; with both at the cap, Ready is the cap and
// ReadyAtLeast is set. oldest is the oldest ready due time (zero when none
// is ready).
func BacklogFromCounts(queue string, scheduled, ready, later, retrying, limit int, oldest time.Time) QueueBacklog {
	b := QueueBacklog{Queue: queue, Retrying: retrying, RetryingAtLeast: retrying >= limit}
	switch {
	case ready < limit:
		b.Ready = ready
	case later < limit:
		b.Ready = max(0, scheduled-later)
	default:
		b.Ready, b.ReadyAtLeast = limit, true
	}
	b.Later = max(0, scheduled-b.Ready)
	if b.Ready > 0 {
		b.OldestReady = oldest
	}
	return b
}

// ThroughputParams are the params of Backlog.Throughput.
type ThroughputParams struct {
	// Since is the start of the window; required.
	Since time.Time
}

// Validate reports params outside the contract.
func (p ThroughputParams) Validate() error {
	if p.Since.IsZero() {
		return fmt.Errorf("%w: throughput needs Since", ErrInvalidParams)
	}
	return nil
}

// ThroughputBucket is how many jobs reached one settled state in one
// minute.
type ThroughputBucket struct {
	// Minute is the start of the minute (UTC, truncated to the minute).
	Minute time.Time
	State  job.State
	Count  int
}

// Settled reports whether s is a state Throughput counts.
func Settled(s job.State) bool {
	switch s {
	case job.StateSucceeded, job.StateDeadLettered, job.StateCancelled, job.StateQuarantined:
		return true
	}
	return false
}

// CompareThroughput orders Throughput buckets by minute, then state.
func CompareThroughput(a, b ThroughputBucket) int {
	if c := a.Minute.Compare(b.Minute); c != 0 {
		return c
	}
	return cmp.Compare(a.State, b.State)
}
