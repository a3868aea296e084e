package sim

import (
	"errors"
	"slices"

	"github.com/backwave/backwave/internal/sim/faultstore"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// The one point where a node's store operation reaches the store: call,
// around node.Caller.Call. It switches on the StoreCommand, never wraps a
// store method: the Simulator's edits of the Command, the oracles'
// checks (registered values, oracles.go) and the fault decision
// (package faultstore) all hook here, so a new Command or oracle adds a
// case or a registration rather than a wrapper per store method.
//
// In order, for one operation under fault f:
//
//  1. f decides whether the call reaches the store at all (faultstore.Call);
//     one that does not is answered with the fault's error, nothing
//     checked.
//  2. The planted bugs that live in the Simulator edit the Command
//     (planted.go), as a buggy Driver would have emitted it.
//  3. Each registered oracle's before runs on that Command, reading the
//     store's rows as they stand.
//  4. The Command is edited to the store's precision (Options.StorePrecision).
//  5. The node's Caller makes the call on the run's Store; its hints are
//     the operation's (w.src), a claim's or a sweep's Queues its scope.
//  6. An error fails the run (the Driver made the call correctly), save
//     the walk fence's answer; then each oracle's after checks the answer,
//     and the latch checks run.
//
// The oracles see what the store applied even when f then tells the node
// the outcome is unknown.

// call makes operation o's store call under fault f and returns the reply
// the node is given.
func (n *simNode) call(o *op, f faultstore.Fault) node.Reply {
	if r, refused := faultstore.Refuse(f, o.cmd); refused {
		return r
	}
	n.reach(o)
	return faultstore.Answer(f, o.cmd, o.reply)
}

// reach is steps 2 to 6 of call: the operation reaching the store. The
// store's answer is left in o.reply.
func (n *simNode) reach(o *op) {
	w := n.w
	c := n.plant(o.cmd)
	for _, or := range w.oracles.all {
		or.before(w, n, c)
	}
	sent := w.toStore(c)
	w.src = o.ref
	switch c := sent.(type) {
	case node.Claim:
		w.scope = c.Queues
	case node.ExpireLeases:
		w.scope = c.Queues
	}
	cl := n.caller(w.st)
	w.withCursors(&cl, sent)
	o.reply = cl.Call(w.ctx, sent)
	o.reply.Command = o.cmd // the node is answered for the Command it sent
	r := &o.reply
	o.answered = r.Err == nil
	if _, walk := sent.(node.WalkAdvance); walk && errors.Is(r.Err, store.ErrStaleLease) {
		o.answered = true // the walk's fence answering: the node is told so
	} else if r.Err != nil {
		w.failf(ClassSafety, InvStoreError, "%s by %s: %v", o.cmd, n.worker, r.Err)
	}
	if r.Err == nil {
		for _, or := range w.oracles.all {
			or.after(w, n, o, sent, r)
		}
	}
	n.notePlanted(sent, o.reply)
	w.checkSettled()
	w.src, w.scope = OpRef{}, nil
}

// toStore is c as the store is handed it: every Lease length, retry delay,
// retention horizon and registry horizon truncated to the store's
// precision.
func (w *world) toStore(c node.StoreCommand) node.StoreCommand {
	if w.precision <= 0 {
		return c
	}
	switch c := c.(type) {
	case node.Claim:
		c.LeaseDuration = w.storeDur(c.LeaseDuration)
		return c
	case node.Renew:
		c.LeaseDuration = w.storeDur(c.LeaseDuration)
		return c
	case node.Report:
		c.Outcomes = slices.Clone(c.Outcomes)
		for i := range c.Outcomes {
			c.Outcomes[i].RetryDelay = w.storeDur(c.Outcomes[i].RetryDelay)
		}
		return c
	case node.Purge:
		c.KeepFor = w.storeDur(c.KeepFor)
		return c
	case node.WalkClaim:
		c.LeaseDuration = w.storeDur(c.LeaseDuration)
		return c
	case node.WalkAdvance:
		c.LeaseDuration = w.storeDur(c.LeaseDuration)
		return c
	case node.StampFleet:
		c.Forget = w.storeDur(c.Forget)
		return c
	}
	return c
}

// The oracles of the node's store calls, in the order they check.
func init() {
	stateless("claim-lease", []Situation{SitSelfReclaim, SitLimitSaturated}, oracleHooks{
		post: func(w *world, n *simNode, o *op, c node.StoreCommand, r *node.Reply) {
			if _, ok := c.(node.Claim); !ok {
				return
			}
			for i := range r.Jobs {
				j := &r.Jobs[i]
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
			w.checkFleetClaim(n, c.OpID(), r.Jobs)
		},
	})
	registerOracle(oracleDef{
		name:       InvFenceExact,
		situations: []Situation{SitRenewLost, SitStaleOutcomeFenced, SitIsolationHealedStaleWrite, SitWorkflowRetryFenced, SitParentOutcomeFenced},
		new:        func() oracle { return new(fenceOracle) },
	})
	stateless("expire-sweep", []Situation{SitExpireFullSweep}, oracleHooks{
		post: func(w *world, _ *simNode, _ *op, c node.StoreCommand, r *node.Reply) {
			if c, ok := c.(node.ExpireLeases); ok && c.Limit > 0 && len(r.Expired.Expired) >= c.Limit {
				w.cov.hit(SitExpireFullSweep)
			}
		},
	})
	stateless(InvMakeUpPerOutage, []Situation{SitMinted, SitMadeUp, SitMintStale, SitPurged, SitPurgeFullBatch}, oracleHooks{
		pre: func(w *world, n *simNode, c node.StoreCommand) {
			if c, ok := c.(node.Mint); ok {
				w.checkMakeUps(n, c.Plans)
			}
		},
		post: func(w *world, n *simNode, _ *op, c node.StoreCommand, r *node.Reply) {
			switch c := c.(type) {
			case node.Mint:
				w.afterMint(n, c.Plans, r.Minted)
			case node.Purge:
				w.afterPurge(c.Limit, r.Purged)
			}
		},
	})
	stateless("walk-claim", []Situation{SitObserverLeaseTakeover}, oracleHooks{
		post: func(w *world, n *simNode, _ *op, c node.StoreCommand, r *node.Reply) {
			if c, ok := c.(node.WalkClaim); ok {
				w.noteWalkClaim(c.Observer, n.worker, r.Walk)
			}
		},
	})
	stateless("fleet-stamp", []Situation{SitFleetSkipped}, oracleHooks{
		post: func(w *world, n *simNode, o *op, c node.StoreCommand, r *node.Reply) {
			if c, ok := c.(node.StampFleet); ok {
				w.afterStamp(n, o, store.FleetStampParams{Worker: n.worker, WireNames: c.WireNames, Forget: c.Forget}, r.Fleet)
			}
		},
	})
}

// fenceOracle holds renewals, outcome reports and Relinquish to the fence:
// each answer is exactly what the store's row showed before the call (n
// holding that Attempt's live Lease or not), and each reported outcome to
// the simple twin of the decision (checkDecision).
type fenceOracle struct {
	leases []job.Lease
	held   []bool // what the rows showed, per Lease of the call
}

func (f *fenceOracle) before(w *world, n *simNode, c node.StoreCommand) {
	f.held = nil
	switch c := c.(type) {
	case node.Renew:
		f.held = w.readHeld(n.worker, c.Leases)
	case node.Report:
		f.leases = f.leases[:0]
		for _, oc := range c.Outcomes {
			f.leases = append(f.leases, oc.Lease)
			w.checkDecision(n, oc)
		}
		f.held = w.readHeld(n.worker, f.leases)
	case node.Relinquish:
		f.held = w.readHeld(n.worker, c.Leases)
	}
}

func (f *fenceOracle) after(w *world, n *simNode, _ *op, c node.StoreCommand, r *node.Reply) {
	before := f.held
	switch c := c.(type) {
	case node.Renew:
		for i, res := range r.Renewed {
			renewed := res.Status != store.RenewLost
			if renewed {
				w.job(res.Lease.ID).leaseExp = w.storeNow().Add(c.LeaseDuration)
			} else {
				w.cov.hit(SitRenewLost)
			}
			if i < len(before) && before[i] != renewed {
				w.failf(ClassSafety, InvFenceExact, "renewal of %s by %s answered %s, but the store's row %s", res.Lease, n.worker, res.Status, heldWord(before[i]))
			}
		}
	case node.Report:
		w.checkReport(n, c.Outcomes, r.Reported, before)
	case node.Relinquish:
		for i, l := range c.Leases {
			if done := slices.Contains(r.Relinquished.Relinquished, l); done != before[i] {
				w.failf(ClassSafety, InvFenceExact, "Relinquish of %s by %s: relinquished=%v, but the store's row %s", l, n.worker, done, heldWord(before[i]))
			}
		}
	}
}
