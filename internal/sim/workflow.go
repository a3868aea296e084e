package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Workflows in the workload. Some Dependency graphs (graph.go) are enqueued
// as a Workflow, and operators retry those Workflows at drawn times with a
// drawn scope while faults go on: the one Operator Action that moves jobs
// from terminal states back to waiting ones (glossary, Workflow Retry). The
// oracles:
//
//   - the store reanimates exactly the members core.RetrySet names over the
//     model's states (workflow-retry-scope);
//   - a reanimated dependent waits, Awaiting Parent, for every parent that
//     is live after the retry — a reanimated parent or one live already —
//     and is released only by its latch counting those parents again: no
//     retried dependent runs before its retried parent has ended
//     (workflow-retry-early); the latch model is recounted with it, so
//     latch-exactly-once and dependency-settled keep holding the store to
//     it afterwards;
//   - a reanimated member's old Attempts stay fenced: the Effect-Once and
//     fence oracles (checked.go) apply unchanged, and Attempts keep
//     growing across the retry (attempt-monotonic), so a late outcome of a
//     pre-retry Attempt is stale (Situation workflow-retry-fenced).

// Invariants of the Workflow Retry oracles.
const (
	// InvRetryScope: a Workflow Retry reanimated other members than its
	// scope names.
	InvRetryScope = "workflow-retry-scope"
	// InvRetryEarly: a reanimated member was Scheduled while a parent of it
	// was live after the retry, or kept waiting with none live.
	InvRetryEarly = "workflow-retry-early"
)

// tagWorkflow keeps Workflow draws apart from every other kind.
const tagWorkflow uint64 = 0x776f_726b_666c // "workfl"

// wfRetry is one operator Workflow Retry of the workload.
type wfRetry struct {
	workflow int
	at       time.Duration
	scope    job.WorkflowRetryScope
}

// wfModel is the world's side of the Workflows: each one's store id, and
// the members the retry in progress names (empty outside one).
type wfModel struct {
	ids      []job.WorkflowID // by workload Workflow index; 0 until inserted
	retrying map[job.ID]bool
}

// drawWorkflow decides whether graph batch b, inserted at at, is a
// Workflow, and draws its retries. It draws from its own stream, so a
// Scenario without Workflows draws everything else as before.
func drawWorkflow(sc *Scenario, wl *workload, b int, at time.Duration) bool {
	gw := sc.Work.Graphs
	d := newDraw(sc.Seed, tagWorkflow, uint64(b)+1)
	if !d.chance(gw.WorkflowProb) {
		return false
	}
	if wl.workflowOf == nil {
		wl.workflowOf = map[int]int{}
	}
	k := len(wl.workflows)
	wl.workflowOf[b] = k
	wl.workflows = append(wl.workflows, b)
	chaos := sc.Chaos.D()
	for r := range 3 {
		if !d.chance(gw.RetryProb / float64(r+1)) {
			break
		}
		when := min(at+d.dur(chaos/10, chaos*8/10).Round(time.Millisecond), chaos-time.Millisecond)
		wl.retries = append(wl.retries, wfRetry{workflow: k, at: when, scope: job.WorkflowRetryScope(d.between(1, 3))})
	}
	return true
}

// setupWorkflows queues the workload's Workflow Retries.
func (w *world) setupWorkflows() {
	w.wf.ids = make([]job.WorkflowID, len(w.wl.workflows))
	for k, r := range w.wl.retries {
		w.workload(event{at: w.at(r.at), kind: evWorkflowRetry, idx: k})
	}
}

// insertBatch inserts the jobs of batch b: as a new Workflow's members if
// the batch is one, else with JobInsertMany.
func (w *world) insertBatch(b int, jobs []store.NewJob) ([]job.ID, error) {
	k, ok := w.wl.workflowOf[b]
	if !ok {
		return w.st.JobInsertMany(w.ctx, store.InsertManyParams{Jobs: jobs})
	}
	res, err := w.st.WorkflowInsert(w.ctx, store.WorkflowInsertParams{Name: fmt.Sprintf("sim-%d", k),
		InsertManyParams: store.InsertManyParams{Jobs: jobs}})
	if err == nil {
		w.wf.ids[k] = res.Workflow
	}
	return res.Jobs, err
}

// retryWorkflow is one operator Workflow Retry: the expected set is worked
// out from the model's states of the members the store still holds, the
// retry runs, and the store's answer is held to it.
func (w *world) retryWorkflow(k int) {
	r := w.wl.retries[k]
	id := w.wf.ids[r.workflow]
	if id == 0 {
		return // not inserted yet: the operator finds nothing to retry
	}
	ms, err := w.st.WorkflowMembers(w.ctx, id)
	if errors.Is(err, store.ErrNotFound) && w.sc.Retention != nil {
		return // retention purged the terminal Workflow whole: nothing to retry
	}
	if err != nil {
		w.mustStore(err)
		return
	}
	nodes := make([]core.RetryNode, 0, len(ms))
	for _, m := range ms {
		js := w.job(m.Job.ID)
		if js.state != m.Job.State {
			w.failf(ClassSafety, InvStoreError, "workflow member %d is %s in the store, %s in the model", m.Job.ID, m.Job.State, js.state)
			return
		}
		nodes = append(nodes, core.RetryNode{ID: m.Job.ID, State: js.state, CancelCause: m.Job.CancelCause, Mode: m.Mode, Parents: m.Parents})
	}
	want := core.RetrySet(nodes, r.scope)
	w.wf.retrying = make(map[job.ID]bool, len(want))
	for _, m := range want {
		w.wf.retrying[m] = true
	}
	w.workloadCall()
	res, err := w.st.WorkflowRetry(w.ctx, store.WorkflowRetryParams{ID: id, Scope: r.scope, Actor: "sim"})
	w.wf.retrying = nil
	if err != nil {
		w.mustStore(err)
		return
	}
	if !slices.Equal(res.Retried, want) {
		w.failf(ClassSafety, InvRetryScope, "Workflow Retry %s of workflow %d reanimated %v, its scope names %v", r.scope, id, res.Retried, want)
		return
	}
	if len(want) > 0 {
		w.cov.hit(SitWorkflowRetried)
	}
	w.checkSettled()
}

// retryTransition updates the latch model with one reanimation the store
// applied and checks it: the member's latch is recounted against its
// parents' states after the retry (live now, or named by the retry in
// progress), and a member with a parent pending must wait for it. A
// waiting member of a reanimated parent waits for that parent again. It
// runs inside the store's OnTransition.
func (w *world) retryTransition(id job.ID, e core.Edge) {
	if e.From == job.StateCancelled {
		w.cov.hit(SitWorkflowRetryCancelled)
	}
	if !w.wf.retrying[id] {
		w.failf(ClassSafety, InvRetryScope, "job %d reanimated along %s outside a Workflow Retry naming it", id, e)
		return
	}
	liveAfter := func(p job.ID) bool { return w.wf.retrying[p] || w.job(p).state.Live() }
	pending := 0
	if d := w.latch.deps[id]; d != nil {
		d.left = false
		for k := range d.parents {
			p := &d.parents[k]
			if liveAfter(p.parent) {
				p.counted, p.state = false, 0
				pending++
			} else {
				p.counted, p.state = true, w.job(p.parent).state
			}
		}
		w.touch(id)
	}
	switch {
	case e.To == job.StateScheduled && pending > 0:
		w.failf(ClassSafety, InvRetryEarly, "reanimated job %d was Scheduled with %d parents live after the retry: %s", id, pending, w.latch.deps[id])
	case e.To == job.StateAwaitingParent && pending == 0:
		w.failf(ClassSafety, InvRetryEarly, "reanimated job %d waits with no parent live after the retry", id)
	case e.To == job.StateAwaitingParent:
		w.cov.hit(SitWorkflowRetryWaits)
	}
	for _, c := range w.latch.children[id] {
		if w.wf.retrying[c] || w.job(c).state != job.StateAwaitingParent {
			continue // reanimated itself (recounted at its own move), or not waiting
		}
		// A waiting dependent of a reanimated member has its whole latch
		// recounted against its parents' states after the retry
		// (store.PlanWorkflowRetry): the reanimated parent's edge, and also
		// one of a parent an operator requeued since its edge was counted,
		// which is live again and waited for again.
		for k, d := 0, w.latch.deps[c]; k < len(d.parents); k++ {
			p := &d.parents[k]
			if liveAfter(p.parent) {
				p.counted, p.state = false, 0
			} else {
				p.counted, p.state = true, w.job(p.parent).state
			}
		}
		w.touch(c)
	}
}
