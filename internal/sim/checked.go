package sim

import (
	"context"
	"errors"
	"slices"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// checkedStore is the run's Store as one store operation of node n reaches
// it: every call a node makes goes to the Store with the oracles' reads of
// the store's rows before it and their checks of what the store answered
// after it. It sits below the fault wrapper (package faultstore), so the
// oracles see what the store applied even when the node is told the outcome
// is unknown. The calls a node never makes pass through unchecked.
type checkedStore struct {
	Store
	w *world
	n *simNode
	o *op
}

// begin starts one call: the hints it announces are the operation's.
func (c *checkedStore) begin() { c.w.src = c.o.ref }

// end ends the call: the latch checks run and the scope of a claim or sweep
// is cleared.
func (c *checkedStore) end() {
	c.w.checkSettled()
	c.w.src, c.w.scope = OpRef{}, nil
}

// answered notes the store's answer and reports whether it succeeded; an
// error fails the run, since the Driver made the call correctly.
func (c *checkedStore) answered(err error) bool {
	c.o.answered = err == nil
	if err != nil {
		c.w.failf(ClassSafety, InvStoreError, "%s by %s: %v", c.o.cmd, c.n.worker, err)
	}
	return err == nil
}

// JobClaim checks a claim stays in its Queues (onTransition) and notes each
// claimed job's Lease.
func (c *checkedStore) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	c.begin()
	defer c.end()
	w, n := c.w, c.n
	w.scope = p.Queues
	p.LeaseDuration = w.storeDur(p.LeaseDuration)
	jobs, err := c.Store.JobClaim(ctx, p)
	if !c.answered(err) {
		return jobs, err
	}
	for i := range jobs {
		j := &jobs[i]
		w.job(j.ID).leaseExp = j.LeaseExpiresAt
		for a := job.Attempt(1); a < j.Attempt; a++ {
			if x := n.attempts[job.Lease{ID: j.ID, Attempt: a}]; x != nil && !x.done {
				w.cov.hit(SitSelfReclaim)
			}
		}
	}
	for q, lim := range w.limits {
		if lim > 0 && w.running[q] >= lim {
			w.cov.hit(SitLimitSaturated)
		}
	}
	w.checkFleetClaim(n, c.o.cmd.OpID(), jobs)
	return jobs, nil
}

// LeaseRenew holds each answer to the fence: renewed exactly when the
// store's row showed n holding the Lease.
func (c *checkedStore) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	c.begin()
	defer c.end()
	w, n := c.w, c.n
	before := w.readHeld(n.worker, p.Leases)
	p.LeaseDuration = w.storeDur(p.LeaseDuration)
	res, err := c.Store.LeaseRenew(ctx, p)
	if !c.answered(err) {
		return res, err
	}
	for i, r := range res {
		renewed := r.Status != store.RenewLost
		if renewed {
			w.job(r.Lease.ID).leaseExp = w.storeNow().Add(p.LeaseDuration)
		} else {
			w.cov.hit(SitRenewLost)
		}
		if i < len(before) && before[i] != renewed {
			w.failf(ClassSafety, InvFenceExact, "renewal of %s by %s answered %s, but the store's row %s", r.Lease, n.worker, r.Status, heldWord(before[i]))
		}
	}
	return res, nil
}

// OutcomeReport holds each outcome to the simple twin of the decision and
// each answer to the fence (checkReport).
func (c *checkedStore) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	c.begin()
	defer c.end()
	w, n := c.w, c.n
	leases := make([]job.Lease, len(p.Outcomes))
	for i, oc := range p.Outcomes {
		leases[i] = oc.Lease
		w.checkDecision(n, oc.Outcome)
	}
	before := w.readHeld(n.worker, leases)
	if w.precision > 0 {
		p.Outcomes = slices.Clone(p.Outcomes)
		for i := range p.Outcomes {
			p.Outcomes[i].RetryDelay = w.storeDur(p.Outcomes[i].RetryDelay)
		}
	}
	res, err := c.Store.OutcomeReport(ctx, p)
	if c.answered(err) {
		w.checkReport(n, p.Outcomes, res, before)
	}
	return res, err
}

// LeaseExpire checks a sweep stays in its Queues and ends only lapsed
// Leases (onTransition).
func (c *checkedStore) LeaseExpire(ctx context.Context, p store.ExpireParams) (store.ExpireResult, error) {
	c.begin()
	defer c.end()
	c.w.scope = p.Queues
	res, err := c.Store.LeaseExpire(ctx, p)
	if c.answered(err) && p.Limit > 0 && len(res.Expired) >= p.Limit {
		c.w.cov.hit(SitExpireFullSweep)
	}
	return res, err
}

// LeaseRelinquish holds each Lease to the fence: handed back exactly when
// the store's row showed n holding it.
func (c *checkedStore) LeaseRelinquish(ctx context.Context, p store.RelinquishParams) (store.RelinquishResult, error) {
	c.begin()
	defer c.end()
	w, n := c.w, c.n
	before := w.readHeld(n.worker, p.Leases)
	res, err := c.Store.LeaseRelinquish(ctx, p)
	if !c.answered(err) {
		return res, err
	}
	for i, l := range p.Leases {
		if done := slices.Contains(res.Relinquished, l); done != before[i] {
			w.failf(ClassSafety, InvFenceExact, "Relinquish of %s by %s: relinquished=%v, but the store's row %s", l, n.worker, done, heldWord(before[i]))
		}
	}
	return res, nil
}

// ScheduleList is a schedule load: nothing to check but the answer.
func (c *checkedStore) ScheduleList(ctx context.Context) (store.ScheduleListResult, error) {
	c.begin()
	defer c.end()
	res, err := c.Store.ScheduleList(ctx)
	c.answered(err)
	return res, err
}

// ScheduleMint holds the plans to the Catch-Up Policy and each applied plan
// to what was dealt with before (schedule.go).
func (c *checkedStore) ScheduleMint(ctx context.Context, p store.MintParams) ([]store.MintResult, error) {
	c.begin()
	defer c.end()
	c.w.checkMakeUps(c.n, p.Plans)
	res, err := c.Store.ScheduleMint(ctx, p)
	if c.answered(err) {
		c.w.afterMint(c.n, p.Plans, res)
	}
	return res, err
}

// JobPurge notes the purge the retention oracle measures from (schedule.go).
func (c *checkedStore) JobPurge(ctx context.Context, p store.PurgeParams) (store.PurgeResult, error) {
	c.begin()
	defer c.end()
	p.KeepFor = c.w.storeDur(p.KeepFor)
	res, err := c.Store.JobPurge(ctx, p)
	if c.answered(err) {
		c.w.afterPurge(p.Limit, res)
	}
	return res, err
}

// ObserverClaim notes who the walk was given to (coverage).
func (c *checkedStore) ObserverClaim(ctx context.Context, p store.ObserverClaimParams) (store.ObserverClaimResult, error) {
	c.begin()
	defer c.end()
	p.LeaseDuration = c.w.storeDur(p.LeaseDuration)
	res, err := c.Store.ObserverClaim(ctx, p)
	if c.answered(err) {
		c.w.noteWalkClaim(p.Observer, p.Holder, res)
	}
	return res, err
}

// ObserverAdvance passes the walk's fence answering (store.ErrStaleLease)
// as an answer, not a store error: a node whose walk Lease lapsed is told
// so.
func (c *checkedStore) ObserverAdvance(ctx context.Context, p store.ObserverAdvanceParams) error {
	c.begin()
	defer c.end()
	p.LeaseDuration = c.w.storeDur(p.LeaseDuration)
	err := c.Store.ObserverAdvance(ctx, p)
	if errors.Is(err, store.ErrStaleLease) {
		c.o.answered = true
		return err
	}
	c.answered(err)
	return err
}

// FleetStamp is a fleet registry stamp: the fleet oracle notes what the
// store stamped (fleet.go).
func (c *checkedStore) FleetStamp(ctx context.Context, p store.FleetStampParams) (store.FleetView, error) {
	c.begin()
	defer c.end()
	p.Forget = c.w.storeDur(p.Forget)
	res, err := c.Store.FleetStamp(ctx, p)
	if c.answered(err) {
		c.w.afterStamp(c.n, c.o, p, res)
	}
	return res, err
}
