package shell

import (
	"context"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// Observer receives what a Pump does as it happens, for in-process metrics:
// each Attempt's start and end, each applied outcome, each Lease lost or
// relinquished and each store call. It is not the glossary's Transition
// Observer: it sees this node's own work, in process, at most once and only
// while the process lives; nothing is stored or redelivered.
//
// The Pump calls AttemptStarted and AttemptFinished on the Attempt's handler
// goroutine and the other methods on its loop goroutine, so an Observer must
// be safe for concurrent use and must return quickly: time spent in a method
// called on the loop is time the Pump does not claim, renew or report. A
// method must not panic; the root package's Client recovers panics of the
// callbacks it is given before they reach the Pump.
type Observer interface {
	// AttemptStarted is called as the handler of j's Attempt is about to
	// run.
	AttemptStarted(ctx context.Context, j job.Job)
	// AttemptFinished is called once the handler of j's Attempt returned
	// (or panicked) with what it reported and how long it ran on the
	// host's clock. r is the result before the Driver decides the outcome;
	// an Attempt abandoned meanwhile (its Lease lost, or the drain over)
	// still reports here, and its result is then dropped.
	AttemptFinished(ctx context.Context, j job.Job, r Result, took time.Duration)
	// OutcomeApplied is called for each outcome the store applied under
	// the fence, with the Queue and Wire Name of its job.
	OutcomeApplied(ctx context.Context, o core.Outcome, queue, wireName string)
	// LeaseLost is called when a renewal found the Lease of an executing
	// Attempt lost and the Pump abandoned it.
	LeaseLost(ctx context.Context, l job.Lease, queue, wireName string)
	// Relinquished is called for each Lease the store took back on a clean
	// stop; queue and wireName are empty when the Pump no longer knows
	// them.
	Relinquished(ctx context.Context, l job.Lease, queue, wireName string)
	// StoreCall is called after each store call the Pump made for the
	// Driver, with its Operation name, how long it took on the host's
	// clock and its error (nil when it succeeded).
	StoreCall(ctx context.Context, op string, took time.Duration, err error)
}

// Operation names the store call of c, as Observer.StoreCall, the Pump's
// Stats and the logs name it: "claim", "renew", "report", "expire",
// "relinquish", "load_schedules", "mint", "purge" or "fleet_stamp".
func Operation(c node.StoreCommand) string {
	switch c.(type) {
	case node.Claim:
		return "claim"
	case node.Renew:
		return "renew"
	case node.Report:
		return "report"
	case node.ExpireLeases:
		return "expire"
	case node.Relinquish:
		return "relinquish"
	case node.LoadSchedules:
		return "load_schedules"
	case node.Mint:
		return "mint"
	case node.Purge:
		return "purge"
	case node.StampFleet:
		return "fleet_stamp"
	}
	return "unknown"
}

// observeReply tells the Observer what a store call answered: the outcomes
// it applied and the Leases it took back. It runs before the Driver's
// Forget drops the Attempts' data.
func (p *Pump) observeReply(r node.Reply) {
	if r.Err != nil {
		return
	}
	switch c := r.Command.(type) {
	case node.Report:
		for i, res := range r.Reported {
			if !res.Applied || i >= len(c.Outcomes) {
				continue
			}
			o := c.Outcomes[i]
			var queue, wire string
			if a := p.attempts[o.Lease]; a != nil {
				queue, wire = a.queue, a.wireName
			}
			p.cfg.Observer.OutcomeApplied(p.ioCtx, o, queue, wire)
		}
	case node.Relinquish:
		for _, l := range r.Relinquished.Relinquished {
			var queue, wire string
			if a := p.handedBack[l]; a != nil {
				queue, wire = a.queue, a.wireName
			}
			p.cfg.Observer.Relinquished(p.ioCtx, l, queue, wire)
		}
		clear(p.handedBack)
	}
}
