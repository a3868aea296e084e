package sim

import (
	"fmt"
	"slices"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// The Dependency oracles. The Simulator keeps its own model of every latch,
// built from the edges it enqueued and the state changes the store reports,
// and holds the store to it (glossary: Dependency, Awaiting Parent,
// Cancelled, Effect-Once):
//
//   - an edge is counted exactly when its parent first reaches a terminal
//     state after the edge exists — at the dependent's insert for a parent
//     terminal already — and never again, even if an operator requeues the
//     parent and it ends terminal a second time; after every store call the
//     store's counted flags must equal the model's (latch-exactly-once);
//   - a dependent leaves Awaiting Parent by release only once every edge is
//     counted and none failed it, by parent failure only once a counted edge
//     failed it (core.ParentFails), and nothing else moves it but an
//     operator cancel (latch-exactly-once);
//   - whatever makes a parent terminal settles its dependents in the same
//     store call: after the call no dependent still waits whose latch the
//     model says released or failed — the cascade complete down the graph
//     (dependency-settled);
//   - at the end, a job still Awaiting Parent must have a parent that is
//     not terminal (orphaned-awaiting-parent).

// Invariants of the Dependency oracles.
const (
	// InvLatchExactlyOnce: a latch counted an edge the model did not, or
	// missed one, or a dependent left Awaiting Parent by a way its counted
	// parents do not allow.
	InvLatchExactlyOnce = "latch-exactly-once"
	// InvDependencySettled: a store call made a parent terminal but left a
	// dependent Awaiting Parent whose latch was released or failed.
	InvDependencySettled = "dependency-settled"
)

// latchModel is the Simulator's model of every Dependency latch.
type latchModel struct {
	deps     map[job.ID]*depModel
	children map[job.ID][]job.ID // parent → dependents, ascending
	// touched lists the dependents whose latch moved in the current store
	// call, for checkSettled.
	touched []job.ID
}

// depModel is one dependent's latch.
type depModel struct {
	mode    job.DependencyMode
	parents []edgeModel // ascending parent id
	left    bool        // it left Awaiting Parent
}

// edgeModel is one edge of a latch.
type edgeModel struct {
	parent  job.ID
	counted bool
	// state is the state the parent reached when the edge was counted.
	state job.State
}

func (d *depModel) edge(parent job.ID) *edgeModel {
	for i := range d.parents {
		if d.parents[i].parent == parent {
			return &d.parents[i]
		}
	}
	return nil
}

// released reports whether the model's latch lets the dependent go: every
// edge counted, none failing; failed reports whether a counted edge failed
// it.
func (d *depModel) verdict() (released, failed bool) {
	released = true
	for _, e := range d.parents {
		switch {
		case !e.counted:
			released = false
		case core.ParentFails(d.mode, e.state):
			failed = true
		}
	}
	return released && !failed, failed
}

// register records the edges of the jobs of one insert before the store
// sees it: batch idxs, whose ids the world has already assigned.
func (w *world) register(idxs []int) {
	if w.latch.deps == nil {
		w.latch.deps = make(map[job.ID]*depModel)
		w.latch.children = make(map[job.ID][]job.ID)
	}
	for _, i := range idxs {
		js := &w.wl.jobs[i]
		if len(js.parents) == 0 {
			continue
		}
		id := w.jobs[i].id
		d := &depModel{mode: js.mode}
		for _, p := range js.parents {
			pid := w.jobs[p].id
			if d.edge(pid) == nil {
				d.parents = append(d.parents, edgeModel{parent: pid})
				w.latch.children[pid] = append(w.latch.children[pid], id)
			}
		}
		slices.SortFunc(d.parents, func(a, b edgeModel) int { return int(a.parent - b.parent) })
		w.latch.deps[id] = d
	}
}

// latchTransition updates the model with one state change the store
// applied and checks the dependent's side of it. It runs inside the store's
// OnTransition, so it reads the world's tracking only, never the store.
func (w *world) latchTransition(id job.ID, e core.Edge) {
	if e.Via == core.ViaWorkflowRetry {
		w.retryTransition(id, e)
		return
	}
	if d := w.latch.deps[id]; d != nil {
		switch {
		case e.Via == core.ViaInsert:
			for k := range d.parents {
				p := &d.parents[k]
				if st := w.job(p.parent).state; st.Terminal() {
					p.counted, p.state = true, st
					w.cov.hit(SitParentTerminalAtInsert)
				}
			}
			w.touch(id)
		case e.From == job.StateAwaitingParent:
			w.leave(id, d, e)
		}
	}
	if !e.To.Terminal() || e.From.Terminal() {
		if e.Via == core.ViaExpire && len(w.latch.children[id]) > 0 {
			w.cov.hit(SitParentLeaseLost)
		}
		return
	}
	for _, c := range w.latch.children[id] {
		d := w.latch.deps[c]
		p := d.edge(id)
		if p.counted {
			continue // counted once already: a requeued parent ended again
		}
		p.counted, p.state = true, e.To
		w.touch(c)
	}
}

// leave checks a dependent leaving Awaiting Parent along e.
func (w *world) leave(id job.ID, d *depModel, e core.Edge) {
	if d.left {
		w.failf(ClassSafety, InvLatchExactlyOnce, "job %d left Awaiting Parent twice (now %s)", id, e)
	}
	d.left = true
	released, failed := d.verdict()
	switch e.Via {
	case core.ViaRelease:
		if !released {
			w.failf(ClassSafety, InvLatchExactlyOnce, "job %d released with its latch at %s", id, d)
		}
		w.cov.hit(SitLatchReleased)
		for _, p := range d.parents {
			if p.state != job.StateSucceeded {
				w.cov.hit(SitAnyTerminalAfterFailure)
			}
		}
	case core.ViaParentFailure:
		if !failed {
			w.failf(ClassSafety, InvLatchExactlyOnce, "job %d cancelled for parent failure with its latch at %s", id, d)
		}
		w.cov.hit(SitParentFailureCascade)
		for _, p := range d.parents {
			if p.counted && w.latch.deps[p.parent] != nil && w.job(p.parent).state == job.StateCancelled {
				w.cov.hit(SitCascadeDeep)
			}
		}
	case core.ViaCancel:
		w.cov.hit(SitWaitingCancelled)
	default:
		w.failf(ClassSafety, InvLatchExactlyOnce, "job %d left Awaiting Parent along %s", id, e)
	}
}

func (w *world) touch(id job.ID) {
	if !slices.Contains(w.latch.touched, id) {
		w.latch.touched = append(w.latch.touched, id)
	}
}

// String renders a latch as its edges, e.g. "[3:succeeded 5:-]".
func (d *depModel) String() string {
	s := d.mode.String() + " ["
	for k, p := range d.parents {
		if k > 0 {
			s += " "
		}
		st := "-"
		if p.counted {
			st = p.state.String()
		}
		s += fmt.Sprintf("%d:%s", p.parent, st)
	}
	return s + "]"
}

// checkSettled runs after every store call: each dependent whose latch
// moved in the call must have settled as the model says, and the store's
// counted flags must be the model's.
func (w *world) checkSettled() {
	touched := w.latch.touched
	w.latch.touched = nil
	for _, id := range touched {
		d := w.latch.deps[id]
		released, failed := d.verdict()
		if !d.left && w.job(id).state == job.StateAwaitingParent && (released || failed) {
			w.failf(ClassSafety, InvDependencySettled, "job %d still Awaiting Parent after the call that settled its latch %s", id, d)
			return
		}
		info, err := w.st.JobDependencies(w.ctx, id)
		if err != nil && int(id) <= len(w.byID) && w.purgedOK(w.byID[id-1], err) {
			continue // terminal and purged: its latch is gone with it
		}
		if err != nil {
			w.mustStore(err)
			return
		}
		for k, p := range info.Parents {
			if k >= len(d.parents) || p.ID != d.parents[k].parent || p.Counted != d.parents[k].counted {
				w.failf(ClassSafety, InvLatchExactlyOnce, "job %d: the store's latch %+v disagrees with the model's %s", id, info.Parents, d)
				return
			}
		}
	}
}

// checkOrphan is the end-of-run check of a job found Awaiting Parent: some
// parent must still be live, able to release it.
func (w *world) checkOrphan(j *job.Job) {
	info, err := w.st.JobDependencies(w.ctx, j.ID)
	if err != nil {
		w.mustStore(err)
		return
	}
	for _, p := range info.Parents {
		if !p.State.Terminal() {
			return
		}
	}
	w.failf(ClassSafety, InvOrphanedAwaitingParent, "job %d is Awaiting Parent with every parent terminal: %+v", j.ID, info.Parents)
}

// parentSituation records s if job id has dependents.
func (w *world) parentSituation(id job.ID, s Situation) {
	if len(w.latch.children[id]) > 0 {
		w.cov.hit(s)
	}
}

// reportSituation records s if c is an outcome report naming a job with
// dependents.
func (w *world) reportSituation(c node.Command, s Situation) {
	if r, ok := c.(node.Report); ok {
		for _, oc := range r.Outcomes {
			w.parentSituation(oc.Lease.ID, s)
		}
	}
}
