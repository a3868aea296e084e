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
	return faultstore.Call(f, o.cmd, func(c node.StoreCommand) node.Reply { return n.reach(o, c) })
}

// reach is steps 2 to 6 of call: the operation reaching the store.
func (n *simNode) reach(o *op, c node.StoreCommand) node.Reply {
	w := n.w
	c = n.plant(c)
	if len(w.pre) < len(oracles) {
		w.pre = make([]any, len(oracles))
	}
	for i := range oracles {
		w.pre[i] = nil
		if b := oracles[i].before; b != nil {
			w.pre[i] = b(w, n, c)
		}
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
	r := cl.Call(w.ctx, sent)
	o.answered = r.Err == nil
	if _, walk := sent.(node.WalkAdvance); walk && errors.Is(r.Err, store.ErrStaleLease) {
		o.answered = true // the walk's fence answering: the node is told so
	} else if r.Err != nil {
		w.failf(ClassSafety, InvStoreError, "%s by %s: %v", o.cmd, n.worker, r.Err)
	}
	if r.Err == nil {
		for i := range oracles {
			if a := oracles[i].after; a != nil {
				a(w, n, o, sent, &r, w.pre[i])
			}
		}
	}
	n.notePlanted(sent, r)
	w.checkSettled()
	w.src, w.scope = OpRef{}, nil
	return r
}

// toStore is c as the store is handed it: every Lease length, retry delay,
// retention horizon and registry horizon truncated to the store's
// precision.
func (w *world) toStore(c node.StoreCommand) node.StoreCommand {
	switch c := c.(type) {
	case node.Claim:
		c.LeaseDuration = w.storeDur(c.LeaseDuration)
		return c
	case node.Renew:
		c.LeaseDuration = w.storeDur(c.LeaseDuration)
		return c
	case node.Report:
		if w.precision > 0 {
			c.Outcomes = slices.Clone(c.Outcomes)
			for i := range c.Outcomes {
				c.Outcomes[i].RetryDelay = w.storeDur(c.Outcomes[i].RetryDelay)
			}
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
	registerOracle(oracle{
		name:       "claim-lease",
		situations: []Situation{SitSelfReclaim, SitLimitSaturated},
		after: func(w *world, n *simNode, o *op, c node.StoreCommand, r *node.Reply, _ any) {
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
	registerOracle(oracle{
		name:       InvFenceExact,
		situations: []Situation{SitRenewLost, SitStaleOutcomeFenced, SitIsolationHealedStaleWrite},
		before: func(w *world, n *simNode, c node.StoreCommand) any {
			switch c := c.(type) {
			case node.Renew:
				return w.readHeld(n.worker, c.Leases)
			case node.Report:
				leases := make([]job.Lease, len(c.Outcomes))
				for i, oc := range c.Outcomes {
					leases[i] = oc.Lease
					w.checkDecision(n, oc)
				}
				return w.readHeld(n.worker, leases)
			case node.Relinquish:
				return w.readHeld(n.worker, c.Leases)
			}
			return nil
		},
		after: func(w *world, n *simNode, _ *op, c node.StoreCommand, r *node.Reply, pre any) {
			before, _ := pre.([]bool)
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
				outs := make([]store.Outcome, len(c.Outcomes))
				for i, oc := range c.Outcomes {
					outs[i] = store.Outcome{Outcome: oc}
				}
				w.checkReport(n, outs, r.Reported, before)
			case node.Relinquish:
				for i, l := range c.Leases {
					if done := slices.Contains(r.Relinquished.Relinquished, l); done != before[i] {
						w.failf(ClassSafety, InvFenceExact, "Relinquish of %s by %s: relinquished=%v, but the store's row %s", l, n.worker, done, heldWord(before[i]))
					}
				}
			}
		},
	})
	registerOracle(oracle{
		name:       "expire-sweep",
		situations: []Situation{SitExpireFullSweep},
		after: func(w *world, _ *simNode, _ *op, c node.StoreCommand, r *node.Reply, _ any) {
			if c, ok := c.(node.ExpireLeases); ok && c.Limit > 0 && len(r.Expired.Expired) >= c.Limit {
				w.cov.hit(SitExpireFullSweep)
			}
		},
	})
	registerOracle(oracle{
		name:       InvMakeUpPerOutage,
		situations: []Situation{SitMinted, SitMadeUp, SitMintStale},
		before: func(w *world, n *simNode, c node.StoreCommand) any {
			if c, ok := c.(node.Mint); ok {
				w.checkMakeUps(n, c.Plans)
			}
			return nil
		},
		after: func(w *world, n *simNode, _ *op, c node.StoreCommand, r *node.Reply, _ any) {
			switch c := c.(type) {
			case node.Mint:
				w.afterMint(n, c.Plans, r.Minted)
			case node.Purge:
				w.afterPurge(c.Limit, r.Purged)
			}
		},
	})
	registerOracle(oracle{
		name:       "walk-claim",
		situations: []Situation{SitObserverLeaseTakeover},
		after: func(w *world, n *simNode, _ *op, c node.StoreCommand, r *node.Reply, _ any) {
			if c, ok := c.(node.WalkClaim); ok {
				w.noteWalkClaim(c.Observer, n.worker, r.Walk)
			}
		},
	})
	registerOracle(oracle{
		name:       "fleet-stamp",
		situations: []Situation{SitFleetSkipped},
		after: func(w *world, n *simNode, o *op, c node.StoreCommand, r *node.Reply, _ any) {
			if c, ok := c.(node.StampFleet); ok {
				w.afterStamp(n, o, store.FleetStampParams{Worker: n.worker, WireNames: c.WireNames, Forget: c.Forget}, r.Fleet)
			}
		},
	})
}
