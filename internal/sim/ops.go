package sim

import (
	"slices"

	"github.com/backwave/backwave/internal/sim/faultstore"
	"github.com/backwave/backwave/node"
)

// op is one store operation of a node, from send to response.
type op struct {
	ref   OpRef
	inc   int
	cmd   node.StoreCommand
	fault OpFault
	sent  uint64
	// withheld: held by an isolation until it heals.
	withheld    bool
	wasWithheld bool
	// answered: the call reached the store, which answered without error
	// (whatever the fault then told the node).
	answered bool

	// reply is what the store answered (or the fault answered in its
	// place), made by the node's Caller: the mapping production runs.
	reply node.Reply
}

// send carries out a store command of the node's machine (OpRef.Machine).
// Operations of one node reach the store in
// the order sent, each after its request delay; with no delay, no isolation
// and nothing ahead of it, the operation applies at once and its result is
// returned for the step to feed straight back — exactly the production
// pump's synchronous round trip.
func (n *simNode) send(machine int, c node.StoreCommand) node.Event {
	w := n.w
	if r, ok := c.(node.Report); ok {
		r.Outcomes = slices.Clone(r.Outcomes) // the Driver may reuse the array
		c = r
	}
	o := &op{ref: OpRef{Node: n.idx, Inc: n.inc, Machine: machine, Op: uint64(c.OpID())}, inc: n.inc, cmd: c}
	o.fault = w.opFault(o.ref)
	n.sendSeq++
	o.sent = n.sendSeq
	applyAt := w.now.Add(o.fault.ReqDelay.D())
	if applyAt.Before(n.lastApply) {
		applyAt = n.lastApply
	}
	applyAt = w.migrationHold(applyAt)
	n.lastApply = applyAt
	if applyAt.Equal(w.now) && n.pendingApply == 0 && len(n.withheld) == 0 {
		n.apply(o)
		if o.withheld {
			return nil
		}
		if res := n.respond(o); res != nil {
			n.noteResponse(o)
			return res
		}
		return nil
	}
	n.pendingApply++
	w.schedule(event{at: applyAt, kind: evOpApply, node: n.idx, inc: n.inc, op: o})
	return nil
}

// opFault decides the fault of one store operation.
func (w *world) opFault(ref OpRef) OpFault {
	if w.chaosOver {
		return OpFault{}
	}
	if w.discover {
		f, ok := drawOpFault(w.sc, ref)
		if ok {
			w.faults.Ops = append(w.faults.Ops, f)
		}
		return f
	}
	return w.index.ops[ref]
}

// apply is the operation reaching the store. The world decides its fault —
// an isolated node's operation is withheld (event timing: it waits here
// until the isolation heals) or rejected, an operation during a store
// outage fails, and the Fault Map may make its outcome unknown — and the
// fault wrapper (package faultstore) decides what that does to the call,
// made at the one hook point (checked.go), through the node's Caller.
func (n *simNode) apply(o *op) {
	w := n.w
	o.withheld = false
	fault := faultstore.None
	switch {
	case n.isoDepth > 0:
		n.isoTouched = true
		if n.withhold {
			o.withheld, o.wasWithheld = true, true
			n.withheld = append(n.withheld, o)
			w.cov.hit(SitIsolationWithheld)
			return
		}
		fault = faultstore.Rejected
	case w.storeDown > 0:
		fault = faultstore.Down
	case o.fault.Unknown == UnknownLost:
		fault = faultstore.Lost
	case o.fault.Unknown == UnknownApplied:
		fault = faultstore.Applied
	}
	o.reply = n.call(o, fault)
	switch fault {
	case faultstore.Rejected:
		w.cov.hit(SitIsolationRejected)
	case faultstore.Down:
		w.cov.hit(SitStoreOutageOp)
	case faultstore.Lost:
		w.cov.hit(SitUnknownLost)
		w.reportSituation(o.cmd, SitParentOutcomeUnknown)
	case faultstore.Applied:
		if o.answered {
			w.cov.hit(SitUnknownApplied)
			w.reportSituation(o.cmd, SitParentOutcomeUnknown)
		}
	}
}

// respond returns the result event at once, or schedules it after the
// response delay and returns nil.
func (n *simNode) respond(o *op) node.Event {
	w := n.w
	if d := o.fault.RespDelay.D(); d > 0 {
		w.schedule(event{at: w.now.Add(d), kind: evOpResponse, node: n.idx, inc: o.inc, op: o})
		return nil
	}
	return o.reply.Event(n.now())
}

// deliver feeds a response to the Driver.
func (n *simNode) deliver(o *op) {
	if !n.up || o.inc != n.inc {
		return
	}
	n.noteResponse(o)
	if n.routeWalk(o) {
		return
	}
	n.step(o.reply.Event(n.now()))
}

// noteResponse does the pump's bookkeeping on a response.
func (n *simNode) noteResponse(o *op) {
	w := n.w
	if o.sent < n.lastResp {
		w.cov.hit(SitResponseReordered)
	}
	n.lastResp = max(n.lastResp, o.sent)
	if _, ok := o.cmd.(node.Report); ok && o.reply.Err != nil {
		w.cov.hit(SitReportRetried)
	}
}

// heal ends a Node Isolation episode (or, with all, every healing one at the
// end of the chaos window): withheld operations reach the store now, in the
// order sent.
func (n *simNode) heal(all bool) {
	w := n.w
	if n.isoDepth == 0 {
		return
	}
	if all {
		if n.isoPermanent {
			n.isoDepth = 1
			return
		}
		n.isoDepth = 0
	} else if n.isoDepth--; n.isoDepth > 0 {
		return
	}
	w.cov.hit(SitIsolationHealed)
	for _, o := range n.withheld {
		n.pendingApply++
		w.schedule(event{at: w.now, kind: evOpApply, node: n.idx, inc: o.inc, op: o})
	}
	n.withheld = nil
	n.lastApply = w.now
}
