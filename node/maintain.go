package node

import (
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/core/cron"
	"github.com/backwave/backwave/job"
)

// The maintenance beat's other two duties (node-driver.txt, "Cadence"):
// Recurring Schedule minting and the Retention Policy's purge sweeps. Both
// run only when configured, and start only on the maintenance beat.
//
// Minting is a two-step dance: LoadSchedules → SchedulesLoaded (the Core's
// mint planner runs on what the store returned) → Mint → MintDone, which
// re-polls only if the mint produced work due now in this node's Queues.
// One dance at a time.
//
// Each purge sweep is bounded by the policy's Batch. A sweep that reports a
// full batch is issued again at once (node-driver.txt, "Cadence"), by way
// of the event loop rather than inside the step that answered it: the
// Driver asks for a Poll with no delay (PollAfter{Delay: 0}) and that Poll
// re-issues the sweep. The Shell carries out a step's commands one store
// round trip at a time until none remains, so a Purge emitted straight
// from PurgeDone would drain a large backlog inside one step, holding
// claims, renewals and reports off for its whole length; going through the
// Poll lets every event that is waiting (a Heartbeat's renewals, a
// finished handler's outcome) interleave between batches, and the drain
// still runs back to back, not one batch per poll interval.

// RetentionPolicy says how long terminal jobs are kept before the
// maintenance beat purges them, with everything stored beside them. Two
// sweeps run, each with its own keep horizon, measured from when a job
// became terminal on the store's clock.
type RetentionPolicy struct {
	// KeepSucceeded is how long Succeeded and Cancelled jobs are kept.
	KeepSucceeded time.Duration
	// KeepDeadLettered is how long Dead-Lettered and Quarantined jobs are
	// kept: usually longer, since an operator may still requeue them.
	KeepDeadLettered time.Duration
	// Batch bounds how many jobs one purge deletes, in one short
	// transaction (DefaultPurgeBatch if 0).
	Batch int
}

// Sweep names one of the two retention sweeps.
type Sweep uint8

const (
	// SweepSucceeded purges Succeeded and Cancelled jobs.
	SweepSucceeded Sweep = iota
	// SweepDeadLettered purges Dead-Lettered and Quarantined jobs.
	SweepDeadLettered
	sweeps
)

// String names the sweep.
func (s Sweep) String() string {
	switch s {
	case SweepSucceeded:
		return "succeeded"
	case SweepDeadLettered:
		return "dead_lettered"
	}
	return "sweep(?)"
}

// States returns the terminal states the sweep purges.
func (s Sweep) States() []job.State {
	if s == SweepDeadLettered {
		return []job.State{job.StateDeadLettered, job.StateQuarantined}
	}
	return []job.State{job.StateSucceeded, job.StateCancelled}
}

func (p *RetentionPolicy) keep(s Sweep) time.Duration {
	if s == SweepDeadLettered {
		return p.KeepDeadLettered
	}
	return p.KeepSucceeded
}

// Validate reports whether the policy is usable (a zero Batch is, meaning
// DefaultPurgeBatch); the error wraps ErrInvalidConfig and names the field
// and its value.
func (p *RetentionPolicy) Validate() error {
	switch {
	case p.KeepSucceeded < 0:
		return invalid("Retention.KeepSucceeded %v (want ≥ 0)", p.KeepSucceeded)
	case p.KeepDeadLettered < 0:
		return invalid("Retention.KeepDeadLettered %v (want ≥ 0)", p.KeepDeadLettered)
	case p.Batch < 0:
		return invalid("Retention.Batch %d (want ≥ 0; 0 means DefaultPurgeBatch)", p.Batch)
	}
	return nil
}

// maintenance is the Driver's state for minting and retention.
type maintenance struct {
	// scheduleOp is the LoadSchedules or Mint in flight (one at a time).
	scheduleOp OpID
	// exprs caches parsed cron expressions by Spec, pruned to the Specs of
	// the latest load.
	exprs map[string]*cron.Expr
	// purgeOp is each sweep's Purge in flight; more marks a sweep whose
	// last batch was full, to issue again at the Poll asked for at once.
	purgeOp [sweeps]OpID
	more    [sweeps]bool
}

// maintain issues the beat's schedule load and purge sweeps, each unless
// it is already in flight.
func (d *Driver) maintain(out []Command) []Command {
	if d.cfg.Schedules && d.maint.scheduleOp == 0 {
		d.maint.scheduleOp = d.op()
		out = append(out, LoadSchedules{Op: d.maint.scheduleOp})
	}
	if d.cfg.Retention != nil {
		for s := range sweeps {
			out = d.purge(out, s)
		}
	}
	return out
}

// continueSweeps issues again, on a Poll between beats (the one asked for
// at once by purgeDone, or any earlier), each sweep whose last batch was
// full.
func (d *Driver) continueSweeps(out []Command) []Command {
	if d.cfg.Retention == nil || d.stopping {
		return out
	}
	for s := range sweeps {
		if d.maint.more[s] {
			out = d.purge(out, s)
		}
	}
	return out
}

func (d *Driver) purge(out []Command, s Sweep) []Command {
	if d.maint.purgeOp[s] != 0 {
		return out
	}
	d.maint.more[s] = false
	d.maint.purgeOp[s] = d.op()
	p := d.cfg.Retention
	return append(out, Purge{Op: d.maint.purgeOp[s], Sweep: s, KeepFor: p.keep(s), Limit: p.Batch})
}

func (d *Driver) purgeDone(e PurgeDone, out []Command) []Command {
	for s := range sweeps {
		if d.maint.purgeOp[s] == e.Op && e.Op != 0 {
			d.maint.purgeOp[s] = 0
			d.maint.more[s] = e.Err == nil && e.Purged >= d.cfg.Retention.Batch
			if d.maint.more[s] && !d.stopping {
				return d.repollWhenReopened(e.Now, 0, out)
			}
			return out
		}
	}
	stray("PurgeDone", e.Op)
	return out
}

// zoned reads a cron expression in a time zone.
type zoned struct {
	e   *cron.Expr
	loc *time.Location
}

func (z zoned) Next(after time.Time) time.Time { return z.e.Next(after, z.loc) }

func (d *Driver) schedulesLoaded(e SchedulesLoaded, out []Command) []Command {
	if e.Op != d.maint.scheduleOp || e.Op == 0 {
		stray("SchedulesLoaded", e.Op)
		return out
	}
	d.maint.scheduleOp = 0
	if e.Err != nil || d.stopping {
		return out
	}
	set := core.MintSettings{Lookahead: d.cfg.MintLookahead, MissedAfter: d.cfg.MissedAfter, MaxOccurrences: d.cfg.MaxMintOccurrences}
	seen := make(map[string]*cron.Expr, len(e.Schedules))
	var plans []core.MintPlan
	for _, ls := range e.Schedules {
		if ls.Location == nil {
			continue
		}
		expr, ok := seen[ls.Schedule.Spec]
		if !ok {
			if expr = d.maint.exprs[ls.Schedule.Spec]; expr == nil {
				var err error
				if expr, err = cron.Parse(ls.Schedule.Spec); err != nil {
					continue // registration validates; a Spec this build cannot read is left alone
				}
			}
			seen[ls.Schedule.Spec] = expr
		}
		if p, ok := core.PlanMint(ls.Schedule.State(), zoned{expr, ls.Location}, e.StoreNow, set); ok {
			plans = append(plans, p)
		}
	}
	d.maint.exprs = seen
	if len(plans) == 0 {
		return out
	}
	d.maint.scheduleOp = d.op()
	return append(out, Mint{Op: d.maint.scheduleOp, Plans: plans})
}

func (d *Driver) mintDone(e MintDone, out []Command) []Command {
	if e.Op != d.maint.scheduleOp || e.Op == 0 {
		stray("MintDone", e.Op)
		return out
	}
	d.maint.scheduleOp = 0
	if e.Err != nil || d.stopping {
		return out
	}
	for _, r := range e.Results {
		for _, j := range r.Jobs {
			if j.DueNow && slices.Contains(d.queues, j.Queue) {
				// The mint produced work due now that this node serves.
				return d.requestPass(out)
			}
		}
	}
	return out
}
