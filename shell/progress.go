package shell

import (
	"context"
	"sync"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// Progress is where the handler of one Attempt reports how far it got. The
// Pump sends the latest report with the next renewal of the Attempt's
// Lease, which the store applies under the renewal's fence: no store call
// of its own, and a report made after the last renewal is never sent.
type Progress struct {
	mu       sync.Mutex
	fraction float64
	note     string
	version  uint64 // reports made
	// Owned by the Pump's loop.
	sent, acked uint64
}

type progressKey struct{}

// attemptContext is the context of one Attempt's handler: its cancellable
// context, which answers ProgressOf with the Attempt's Progress and
// CursorOf with its Cursor. It lives
// inside the attempt, so the value costs the Attempt no allocation of its
// own (context.WithValue would make one per job).
type attemptContext struct {
	context.Context
	progress *Progress
	cursor   *Cursor
}

// Value returns the Attempt's Progress for progressKey, its Cursor for
// cursorKey, and asks the wrapped context for any other key.
func (c *attemptContext) Value(key any) any {
	switch key.(type) {
	case progressKey:
		return c.progress
	case cursorKey:
		return c.cursor
	}
	return c.Context.Value(key)
}

// ProgressOf returns the Progress of the Attempt whose handler context ctx
// is, or nil outside one.
func ProgressOf(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}

// Report records fraction (the caller checks it lies in [0, 1]) and note,
// cut to store.MaxProgressNoteBytes at a rune boundary and marked as
// Failure Detail is. The last report before a renewal is the one sent.
func (p *Progress) Report(fraction float64, note string) {
	note = TruncateDetail(note, store.MaxProgressNoteBytes)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fraction, p.note = fraction, note
	p.version++
}

// progress collects, for a renewal of leases, the reports made since the
// last renewal that reached the store; the Caller calls it.
func (p *Pump) progress(leases []job.Lease) []store.ProgressReport {
	var out []store.ProgressReport
	for _, l := range leases {
		a := p.attempts[l]
		if a == nil {
			continue
		}
		pr := &a.progress
		pr.mu.Lock()
		if pr.version > pr.acked {
			out = append(out, store.ProgressReport{Lease: l, Fraction: pr.fraction, Note: pr.note})
			pr.sent = pr.version
		}
		pr.mu.Unlock()
	}
	return out
}

// ackRenewal marks the progress reports and Cursors a successful renewal
// carried as delivered; after a failed one they go again with the next
// renewal (and a Cursor with the outcome, if that comes first).
func (p *Pump) ackRenewal(r node.Reply) {
	c, ok := r.Command.(node.Renew)
	if !ok || r.Err != nil {
		return
	}
	for _, l := range c.Leases {
		if a := p.attempts[l]; a != nil {
			a.progress.acked = a.progress.sent
			a.cursor.acked = a.cursor.sent
		}
	}
}
