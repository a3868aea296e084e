package sim

// crash applies a crash fault: the node's Driver, outcome buffer and
// handlers are lost; it restarts after the fault's Down with a fresh Driver
// and a new worker id, unless the crash is permanent.
func (w *world) crash(k int) {
	f := &w.faults.Crashes[k]
	if f.Node < 0 || f.Node >= len(w.nodes) || (w.chaosOver && !f.Permanent) {
		return
	}
	n := w.nodes[f.Node]
	if f.Permanent {
		n.lost = true
		w.cov.hit(SitPermanentLoss)
	}
	if !n.up {
		return
	}
	w.cov.hit(SitNodeCrash)
	n.crashed = true
	n.exit()
	if !f.Permanent {
		w.schedule(event{at: w.now.Add(f.Down.D()), kind: evStart, node: n.idx, inc: n.inc})
	}
}

// isolate begins a Node Isolation window.
func (w *world) isolate(k int) {
	f := &w.faults.Isolations[k]
	if f.Node < 0 || f.Node >= len(w.nodes) || (w.chaosOver && !f.Permanent) {
		return
	}
	n := w.nodes[f.Node]
	n.isoDepth++
	n.withhold = f.Withhold
	w.cov.hit(SitIsolated)
	if f.Permanent {
		n.isoPermanent = true
		w.cov.hit(SitPermanentLoss)
		return
	}
	w.schedule(event{at: w.now.Add(f.For.D()), kind: evHeal, node: n.idx})
}

// endChaos ends the chaos window: every healing fault heals — isolations
// heal and release what they withheld, crashed nodes restart, clocks stop
// jumping, hints and store operations stop misbehaving — and the
// Drain-Liveness deadline is set.
func (w *world) endChaos() {
	w.chaosOver = true
	w.live0 = w.live
	w.storeDown = 0
	for _, n := range w.nodes {
		n.heal(true)
		if !n.up && !n.lost {
			n.start()
		}
	}
	w.queueTail()
	if w.sched.pending == 0 {
		w.armDrainDeadline()
	}
}

// armDrainDeadline sets the Drain-Liveness deadline from the store's state
// now: at the end of the chaos window, or, when schedules outlive it
// (schedTail), at the removal of the last, so the jobs they minted after
// the faults ceased are counted in the bound.
func (w *world) armDrainDeadline() {
	anchor, bound := w.drainBound()
	w.bound = bound
	w.deadline = anchor.Add(bound)
	w.schedule(event{at: w.deadline, kind: evDeadline})
}

// restartStore applies a store restart: the store restarts (Store.Restart:
// every committed write survives; the Wake-Up Hint subscribers do not, and
// the running nodes never subscribe again), and every node's store
// operation fails until the outage ends. The workload's own calls
// (inserts, Operator Actions) stand for an application that retries them, so
// they land at once.
func (w *world) restartStore(k int) {
	if w.chaosOver {
		return
	}
	f := &w.faults.Restarts[k]
	if err := w.st.Restart(); err != nil {
		w.failf(ClassCrash, InvStoreError, "store restart: %v", err)
		return
	}
	for _, n := range w.nodes {
		n.unsub = nil // the subscription died with the old store
	}
	w.storeDown++
	w.cov.hit(SitStoreRestarted)
	w.schedule(event{at: w.now.Add(f.Down.D()), kind: evStoreUp})
}
