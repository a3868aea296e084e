package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Caller carries out a Driver's StoreCommands: Call is the one mapping of
// each Command to its store call and of the store's answer to the result
// Event. The production pump (package shell) wraps it with deadlines and
// logging, the Simulator with its fault decisions and oracle reads; neither
// calls the store for a Command itself, so the Simulator proves the mapping
// production runs.
//
// A Caller holds no state of its own beyond its fields; Call is safe to use
// from one goroutine at a time, as the Driver's single store round trip is.
type Caller struct {
	// Worker is the lease-holder identity of the node (Config.Worker).
	Worker job.WorkerID
	// Store is where claims, renewals, reports, expiry and Relinquish go.
	// Required.
	Store store.Worker
	// Schedules serves LoadSchedules and Mint; required when the Driver
	// mints (Config.Schedules).
	Schedules store.Schedules
	// Retention serves Purge; required when the Driver has a Retention
	// Policy.
	Retention store.Retention
	// Observers serves a Walker's WalkClaim and WalkAdvance; required when
	// the node walks for a Transition Observer.
	Observers store.Observers
	// Fleet serves StampFleet; required when the Driver takes part in the
	// fleet registry (Config.WireNames).
	Fleet store.Fleet
	// Detail joins what the caller keeps for one outcome's Attempt — its
	// Failure Detail, Job Output, Tag delta and a Cursor not yet stored,
	// which never cross the determinism boundary — onto the outcome before
	// it is reported. Nil
	// reports outcomes without them.
	Detail func(o *store.Outcome)
	// Progress returns what the caller keeps of handlers' progress for the
	// Leases of a renewal, sent with it (RenewParams.Progress) so that
	// progress costs no store call of its own. Nil sends none.
	Progress func(leases []job.Lease) []store.ProgressReport
	// Cursors returns the Cursors handlers saved, not yet stored, for the
	// Leases of a renewal, sent with it (RenewParams.Cursors) under its
	// fence; a Cursor saved after the last renewal goes with the outcome
	// (Detail sets store.Outcome.Cursor). Nil sends none.
	Cursors func(leases []job.Lease) []store.CursorSave
	// Zone loads a Recurring Schedule's IANA time zone ("" is UTC). Zone
	// data is I/O, so the caller supplies it; an error leaves that schedule
	// out of the load (the caller logs it), so one bad row never stops the
	// others from minting. Nil loads "" and "UTC" as UTC and leaves every
	// other zone out.
	Zone func(name string) (*time.Location, error)
}

// errNoZoneLoader leaves a schedule out when a Caller has no Zone.
var errNoZoneLoader = errors.New("node: no time-zone loader")

// Reply is what one store call answered, before it is stamped as the result
// Event. The field of the Command's kind is set; Err is the call's error
// (then nothing else is).
type Reply struct {
	// Command is the StoreCommand this replies to.
	Command StoreCommand
	// Jobs are the jobs a Claim leased, Attempt charged.
	Jobs []job.Job
	// Reopen answers a Claim: when a Rate Limit that withheld due jobs
	// reopens (store.ClaimParams.Reopen).
	Reopen time.Duration
	// Renewed answers a Renew per Lease, in input order.
	Renewed []store.RenewResult
	// Reported answers a Report per outcome, in input order.
	Reported []store.ReportResult
	// Expired answers an ExpireLeases.
	Expired store.ExpireResult
	// Relinquished answers a Relinquish.
	Relinquished store.RelinquishResult
	// StoreNow and Schedules answer a LoadSchedules: the store's clock at
	// the load and each schedule whose zone loaded.
	StoreNow  time.Time
	Schedules []LoadedSchedule
	// Minted answers a Mint per plan, in input order.
	Minted []store.MintResult
	// Purged answers a Purge.
	Purged store.PurgeResult
	// Walk answers a WalkClaim.
	Walk store.ObserverClaimResult
	// Fleet answers a StampFleet: the registry and the store's now.
	Fleet store.FleetView
	// Err is the store call's error.
	Err error
}

// Failed returns the Reply of a call whose fate is err: nothing it did is
// known. The Simulator answers a faulty operation with it.
func Failed(c StoreCommand, err error) Reply { return Reply{Command: c, Err: err} }

// Call makes the store call of c and returns what it answered. It panics on a
// StoreCommand it does not know, or one whose store is not configured: both
// are broken invariants between the Driver and its caller (the caller's
// configuration is validated before the Driver runs).
func (cl *Caller) Call(ctx context.Context, c StoreCommand) Reply {
	r := Reply{Command: c}
	switch c := c.(type) {
	case Claim:
		r.Jobs, r.Err = cl.Store.JobClaim(ctx, store.ClaimParams{
			Worker: cl.Worker, Queues: c.Queues, Limit: c.Limit, LeaseDuration: c.LeaseDuration, Reopen: &r.Reopen, Skip: c.Skip,
		})
	case Renew:
		p := store.RenewParams{Worker: cl.Worker, Leases: c.Leases, LeaseDuration: c.LeaseDuration}
		if cl.Progress != nil {
			p.Progress = cl.Progress(c.Leases)
		}
		if cl.Cursors != nil {
			p.Cursors = cl.Cursors(c.Leases)
		}
		r.Renewed, r.Err = cl.Store.LeaseRenew(ctx, p)
	case Report:
		outs := make([]store.Outcome, len(c.Outcomes))
		for i, o := range c.Outcomes {
			outs[i] = store.Outcome{Outcome: o}
			if cl.Detail != nil {
				cl.Detail(&outs[i])
			}
		}
		r.Reported, r.Err = cl.Store.OutcomeReport(ctx, store.ReportParams{Worker: cl.Worker, Outcomes: outs})
	case ExpireLeases:
		r.Expired, r.Err = cl.Store.LeaseExpire(ctx, store.ExpireParams{Queues: c.Queues, Limit: c.Limit})
	case Relinquish:
		r.Relinquished, r.Err = cl.Store.LeaseRelinquish(ctx, store.RelinquishParams{Worker: cl.Worker, Leases: c.Leases})
	case LoadSchedules:
		var res store.ScheduleListResult
		res, r.Err = cl.schedules().ScheduleList(ctx)
		if r.Err == nil {
			r.StoreNow = res.Now
			r.Schedules = make([]LoadedSchedule, 0, len(res.Schedules))
			for _, s := range res.Schedules {
				if loc, err := cl.zone(s.Zone); err == nil {
					r.Schedules = append(r.Schedules, LoadedSchedule{Schedule: s, Location: loc})
				}
			}
		}
	case Mint:
		r.Minted, r.Err = cl.schedules().ScheduleMint(ctx, store.MintParams{Plans: c.Plans})
	case StampFleet:
		if cl.Fleet == nil {
			panic("node: StampFleet without a store.Fleet")
		}
		r.Fleet, r.Err = cl.Fleet.FleetStamp(ctx, store.FleetStampParams{Worker: cl.Worker, WireNames: c.WireNames, Forget: c.Forget})
	case Purge:
		if cl.Retention == nil {
			panic("node: Purge without a store.Retention")
		}
		r.Purged, r.Err = cl.Retention.JobPurge(ctx, store.PurgeParams{States: c.Sweep.States(), KeepFor: c.KeepFor, Limit: c.Limit})
	case WalkClaim:
		r.Walk, r.Err = cl.observers().ObserverClaim(ctx, store.ObserverClaimParams{
			Observer: c.Observer, Holder: cl.Worker, LeaseDuration: c.LeaseDuration, States: c.States, Limit: c.Limit,
			StartAtEnd: c.StartAtEnd,
		})
	case WalkAdvance:
		r.Err = cl.observers().ObserverAdvance(ctx, store.ObserverAdvanceParams{
			Observer: c.Observer, Holder: cl.Worker, Token: c.Token, To: c.To, LeaseDuration: c.LeaseDuration, Release: c.Release,
		})
	default:
		panic(fmt.Sprintf("node: unknown store command %T", c))
	}
	if r.Err != nil {
		return Failed(c, r.Err)
	}
	return r
}

func (cl *Caller) observers() store.Observers {
	if cl.Observers == nil {
		panic("node: a walk command without a store.Observers")
	}
	return cl.Observers
}

func (cl *Caller) schedules() store.Schedules {
	if cl.Schedules == nil {
		panic("node: a schedule command without a store.Schedules")
	}
	return cl.Schedules
}

func (cl *Caller) zone(name string) (*time.Location, error) {
	if cl.Zone != nil {
		return cl.Zone(name)
	}
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	return nil, errNoZoneLoader
}

// Event returns the result event of the reply, stamped now: the event the
// Driver must be fed for the reply's Command.
func (r Reply) Event(now time.Time) Event {
	switch c := r.Command.(type) {
	case Claim:
		return ClaimDone{Now: now, Op: c.Op, Jobs: r.Jobs, Reopen: r.Reopen, Err: r.Err}
	case Renew:
		return RenewDone{Now: now, Op: c.Op, Results: r.Renewed, Err: r.Err}
	case Report:
		return ReportDone{Now: now, Op: c.Op, Results: r.Reported, Err: r.Err}
	case ExpireLeases:
		return ExpireDone{Now: now, Op: c.Op, Expired: len(r.Expired.Expired), Err: r.Err}
	case Relinquish:
		return RelinquishDone{Now: now, Op: c.Op, Err: r.Err}
	case LoadSchedules:
		return SchedulesLoaded{Now: now, Op: c.Op, StoreNow: r.StoreNow, Schedules: r.Schedules, Err: r.Err}
	case Mint:
		return MintDone{Now: now, Op: c.Op, Results: r.Minted, Err: r.Err}
	case Purge:
		return PurgeDone{Now: now, Op: c.Op, Purged: r.Purged.Purged, Err: r.Err}
	case WalkClaim:
		return WalkClaimDone{Now: now, Op: c.Op, Result: r.Walk, Err: r.Err}
	case WalkAdvance:
		return WalkAdvanceDone{Now: now, Op: c.Op, Err: r.Err}
	case StampFleet:
		return FleetStamped{Now: now, Op: c.Op, StoreNow: r.Fleet.Now, Handlers: r.Fleet.Handlers, Err: r.Err}
	}
	panic(fmt.Sprintf("node: reply to unknown store command %T", r.Command))
}
