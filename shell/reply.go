package shell

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// logReply logs what one store call answered, with the canonical keys of
// the Attempts it names. It reads the per-Attempt data the Pump keeps; the
// Driver's Forget, which follows a report's result, is what drops it.
func (p *Pump) logReply(r node.Reply) {
	switch c := r.Command.(type) {
	case node.Claim:
		if r.Err != nil {
			p.log.Error("claim failed", "queues", c.Queues, "limit", c.Limit, "error", r.Err)
		}
	case node.Renew:
		if r.Err != nil {
			p.log.Error("lease renewal failed", "leases", len(c.Leases), "error", r.Err)
		}
	case node.Report:
		p.logReport(c, r)
	case node.ExpireLeases:
		switch {
		case r.Err != nil:
			p.log.Error("lease expiry sweep failed", "queues", c.Queues, "error", r.Err)
		case len(r.Expired.Expired) > 0:
			p.log.Info("expired lapsed leases", "queues", c.Queues, "expired", len(r.Expired.Expired))
		}
	case node.Relinquish:
		if r.Err != nil {
			p.log.Warn("relinquish failed: the leases will lapse instead", "leases", len(c.Leases), "error", r.Err)
			p.unreturned = errors.Join(p.unreturned, fmt.Errorf("hand back %d leases (they will lapse instead): %w", len(c.Leases), r.Err))
		} else {
			p.log.Info("relinquished leases", "leases", len(c.Leases), "relinquished", len(r.Relinquished.Relinquished))
		}
	case node.LoadSchedules:
		if r.Err != nil {
			p.log.Error("loading recurring schedules failed", "error", r.Err)
		}
	case node.Mint:
		p.logMint(c, r)
	case node.StampFleet:
		if r.Err != nil {
			p.log.Error("fleet registry stamp failed", "wire_names", len(c.WireNames), "error", r.Err)
		}
	case node.Purge:
		switch {
		case r.Err != nil:
			p.log.Error("retention sweep failed", "sweep", c.Sweep.String(), "error", r.Err)
		case r.Purged.Purged > 0:
			p.log.Info("retention purged terminal jobs", "sweep", c.Sweep.String(), "purged", r.Purged.Purged, "keep", c.KeepFor)
		}
	}
}

// logReport logs each outcome of a report by how it went.
func (p *Pump) logReport(c node.Report, r node.Reply) {
	if r.Err != nil {
		p.log.Error("outcome report failed", "outcomes", len(c.Outcomes), "error", r.Err)
		return
	}
	debug := p.log.Enabled(p.ioCtx, slog.LevelDebug)
	var byLease map[job.Lease]bool // built only if the answers are not in input order
	applied := func(i int, l job.Lease) bool {
		if byLease == nil && i < len(r.Reported) && r.Reported[i].Lease == l {
			return r.Reported[i].Applied // the store answers in input order
		}
		if byLease == nil {
			byLease = make(map[job.Lease]bool, len(r.Reported))
			for _, res := range r.Reported {
				byLease[res.Lease] = res.Applied
			}
		}
		return byLease[l]
	}
	for i, o := range c.Outcomes {
		ok := applied(i, o.Lease)
		if ok && o.State == job.StateSucceeded && !debug {
			continue // nothing to log
		}
		a := p.attempts[o.Lease]
		switch {
		case !ok:
			p.log.Warn("outcome rejected by the fence: the lease was no longer held", p.attrs(o.Lease, a, "state", o.State.String())...)
		case o.State == job.StateQuarantined:
			p.log.Error("job quarantined", p.attrs(o.Lease, a, "failure_detail", detailOf(a))...)
		case o.State == job.StateDeadLettered:
			p.log.Warn("job dead-lettered", p.attrs(o.Lease, a, "failure_detail", detailOf(a))...)
		case o.State == job.StateScheduled:
			p.log.Info("attempt failed: retry scheduled", p.attrs(o.Lease, a, "retry_delay", o.RetryDelay, "failure_detail", detailOf(a))...)
		case debug:
			p.log.Debug("outcome applied", p.attrs(o.Lease, a, "state", o.State.String())...)
		}
	}
}

// logMint logs what the mint plans did: each job minted, each make-up job
// and each skipped occurrence.
func (p *Pump) logMint(c node.Mint, r node.Reply) {
	if r.Err != nil {
		p.log.Error("minting recurring schedules failed", "plans", len(c.Plans), "error", r.Err)
		return
	}
	for i, res := range r.Minted {
		if !res.Applied {
			p.log.Debug("mint plan stale: another node minted first", "schedule", res.Schedule)
			continue
		}
		for _, j := range res.Jobs {
			msg := "recurring schedule minted a job"
			if j.MakeUp {
				msg = "recurring schedule minted its one make-up job for missed occurrences"
			}
			p.log.Info(msg, "schedule", res.Schedule, "job", int64(j.ID), "queue", j.Queue, "occurrence", j.At)
		}
		for _, s := range c.Plans[i].Skips {
			msg := "recurring schedule skipped an occurrence: an earlier instance is still live (No-Overlap)"
			if s.Reason == core.SkipMissed {
				msg = "recurring schedule missed occurrences while no node minted (Catch-Up Policy skip)"
			}
			p.log.Warn(msg, "schedule", res.Schedule, "occurrence", s.At, "first_missed", s.First)
		}
	}
}

// zone loads and caches an IANA zone ("" is UTC) for the Caller. Zone data is
// I/O, so it is loaded here, above the determinism boundary, and cached for
// the Pump's life. A zone that does not load is logged and its schedule left
// out, so one bad row never stops the others from minting.
func (p *Pump) zone(name string) (*time.Location, error) {
	if loc, ok := p.zones[name]; ok {
		return loc, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		p.log.Error("recurring schedule left out: its time zone does not load", "zone", name, "error", err)
		return nil, err
	}
	p.zones[name] = loc
	return loc, nil
}
