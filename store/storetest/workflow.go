package storetest

import (
	"maps"
	"slices"
	"testing"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Helpers for Workflow tests.

func (e *env) workflowInsert(p store.WorkflowInsertParams) store.WorkflowInsertResult {
	e.t.Helper()
	res, err := e.s.WorkflowInsert(e.ctx, p)
	if err != nil {
		e.t.Fatalf("WorkflowInsert: %v", err)
	}
	if len(res.Jobs) != len(p.Jobs) || res.Workflow < 1 {
		e.t.Fatalf("WorkflowInsert = %+v for %d jobs", res, len(p.Jobs))
	}
	return res
}

func (e *env) newWorkflow(name string, jobs ...store.NewJob) store.WorkflowInsertResult {
	e.t.Helper()
	return e.workflowInsert(store.WorkflowInsertParams{Name: name, InsertManyParams: store.InsertManyParams{Jobs: jobs}})
}

func (e *env) workflow(id job.WorkflowID) store.WorkflowInfo {
	e.t.Helper()
	w, err := e.s.WorkflowGet(e.ctx, id)
	if err != nil {
		e.t.Fatalf("WorkflowGet(%d): %v", id, err)
	}
	return w
}

func (e *env) wantStatus(id job.WorkflowID, want job.WorkflowStatus) store.WorkflowInfo {
	e.t.Helper()
	w := e.workflow(id)
	if got := w.Status(); got != want {
		e.t.Fatalf("workflow %d is %s (counts %v), want %s", id, got, w.Counts, want)
	}
	return w
}

// wantCounts requires the Workflow's member counts to match the states its
// members are in now, read one by one: the maintained counts are exact.
func (e *env) wantMemberCounts(id job.WorkflowID) {
	e.t.Helper()
	ms, err := e.s.WorkflowMembers(e.ctx, id)
	if err != nil {
		e.t.Fatalf("WorkflowMembers(%d): %v", id, err)
	}
	want := map[job.State]int{}
	for _, m := range ms {
		want[m.Job.State]++
	}
	if got := e.workflow(id).Counts; !maps.Equal(got, want) {
		e.t.Fatalf("workflow %d counts %v, its members are %v", id, got, want)
	}
}

// runAll claims and succeeds every due job of queue until none is due.
func (e *env) runAll(queue string) {
	e.t.Helper()
	for range 1000 {
		jobs := e.claim(w1, 100, queue)
		if len(jobs) == 0 {
			return
		}
		for _, j := range jobs {
			e.reportApplied(w1, succeeded(j))
		}
	}
	e.t.Fatal("runAll: queue never drained")
}

func (e *env) retry(id job.WorkflowID, scope job.WorkflowRetryScope) store.WorkflowRetryResult {
	e.t.Helper()
	res, err := e.s.WorkflowRetry(e.ctx, store.WorkflowRetryParams{ID: id, Scope: scope, Actor: actor})
	if err != nil {
		e.t.Fatalf("WorkflowRetry(%d, %s): %v", id, scope, err)
	}
	return res
}

func testWorkflow(t *testing.T, s *suite) {
	// glossary, Workflow: a stored row holding identity, name and config;
	// status derived from member states.
	s.run(t, "InsertAndStatus", func(t *testing.T, e *env) {
		q := "wf"
		before := e.now()
		res := e.newWorkflow("orders", newJob(q), child(q, onSuccess, store.InBatch(0)))
		w := e.wantStatus(res.Workflow, job.WorkflowRunning)
		e.within("created at", w.CreatedAt, before, e.now())
		if w.Name != "orders" || w.Members() != 2 || w.RestartOf != 0 {
			t.Fatalf("workflow = %+v", w)
		}
		if w.Counts[job.StateScheduled] != 1 || w.Counts[job.StateAwaitingParent] != 1 {
			t.Fatalf("counts = %v", w.Counts)
		}
		second := e.newWorkflow("orders", newJob(q))
		if second.Workflow <= res.Workflow {
			t.Fatalf("workflow ids %d then %d do not sort by creation", res.Workflow, second.Workflow)
		}
		e.runAll(q)
		e.wantStatus(res.Workflow, job.WorkflowSucceeded)
		e.wantMemberCounts(res.Workflow)
		ms, err := e.s.WorkflowMembers(e.ctx, res.Workflow)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 2 || ms[0].Job.ID != res.Jobs[0] || !slices.Equal(ms[1].Parents, []job.ID{res.Jobs[0]}) || ms[1].Mode != onSuccess {
			t.Fatalf("members = %+v", ms)
		}
		list, err := e.s.WorkflowList(e.ctx, store.WorkflowListParams{Name: "orders"})
		if err != nil || len(list) != 2 || list[0].ID != second.Workflow {
			t.Fatalf("WorkflowList(name) = %+v, %v", list, err)
		}
		list, err = e.s.WorkflowList(e.ctx, store.WorkflowListParams{Status: job.WorkflowSucceeded})
		if err != nil || len(list) != 2 {
			t.Fatalf("WorkflowList(succeeded) = %+v, %v", list, err)
		}
		list, err = e.s.WorkflowList(e.ctx, store.WorkflowListParams{BeforeID: second.Workflow, Limit: 1})
		if err != nil || len(list) != 1 || list[0].ID != res.Workflow {
			t.Fatalf("WorkflowList(before) = %+v, %v", list, err)
		}
		_, err = e.s.WorkflowGet(e.ctx, second.Workflow+100)
		e.wantErr("WorkflowGet(unknown)", err, store.ErrNotFound)
	})

	// glossary, Workflow: every gating parent of a member is a member of the
	// same Workflow, store-enforced at enqueue.
	s.run(t, "ParentOutsideWorkflow", func(t *testing.T, e *env) {
		q := "wf"
		loose := e.insert(newJob(q))[0]
		other := e.newWorkflow("other", newJob(q))
		mine := e.newWorkflow("mine", newJob(q))
		for _, tc := range []struct {
			name string
			p    store.WorkflowInsertParams
		}{
			{"new names a job", store.WorkflowInsertParams{Name: "x", InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{child(q, onSuccess, store.Existing(loose))}}}},
			{"append names a job of none", store.WorkflowInsertParams{Workflow: mine.Workflow, InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{child(q, onSuccess, store.Existing(loose))}}}},
			{"append names another's member", store.WorkflowInsertParams{Workflow: mine.Workflow, InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{
				child(q, onAny, store.Existing(mine.Jobs[0]), store.Existing(other.Jobs[0]))}}}},
			{"append names an unknown id", store.WorkflowInsertParams{Workflow: mine.Workflow, InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{child(q, onSuccess, store.Existing(loose+1000))}}}},
		} {
			_, err := e.s.WorkflowInsert(e.ctx, tc.p)
			e.wantErr(tc.name, err, store.ErrParentOutsideWorkflow)
			e.wantErr(tc.name, err, store.ErrInvalidParams)
		}
		if w := e.workflow(mine.Workflow); w.Members() != 1 {
			t.Fatalf("a refused append changed the workflow: %+v", w)
		}
		_, err := e.s.WorkflowInsert(e.ctx, store.WorkflowInsertParams{Workflow: mine.Workflow + 100, InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{newJob(q)}}})
		e.wantErr("append to unknown", err, store.ErrNotFound)
		uniq := newJob(q)
		uniq.Unique = store.Unique{Key: "k", Scope: store.UniqueWhileLive}
		_, err = e.s.WorkflowInsert(e.ctx, store.WorkflowInsertParams{Name: "u", InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{uniq}}})
		e.wantErr("unique member", err, store.ErrInvalidParams)
		_, err = e.s.WorkflowInsert(e.ctx, store.WorkflowInsertParams{Name: "", InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{newJob(q)}}})
		e.wantErr("no name", err, store.ErrInvalidParams)
		// An append naming a member of its own Workflow is fine.
		app := e.workflowInsert(store.WorkflowInsertParams{Workflow: mine.Workflow, InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{
			child(q, onSuccess, store.Existing(mine.Jobs[0]))}}})
		if app.Workflow != mine.Workflow {
			t.Fatalf("append answered workflow %d", app.Workflow)
		}
		e.wantMemberCounts(mine.Workflow)
	})

	// glossary, Workflow: appending live work to a drained Workflow
	// reopens its derived status.
	s.run(t, "AppendReopens", func(t *testing.T, e *env) {
		q := "wf"
		res := e.newWorkflow("grow", newJob(q))
		e.runAll(q)
		e.wantStatus(res.Workflow, job.WorkflowSucceeded)
		app := e.workflowInsert(store.WorkflowInsertParams{Workflow: res.Workflow, InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{
			child(q, onSuccess, store.Existing(res.Jobs[0])), newJob(q)}}})
		e.wantStatus(res.Workflow, job.WorkflowRunning)
		// The parent is Succeeded already: its edge counts at once.
		e.wantState(app.Jobs[0], job.StateScheduled)
		e.runAll(q)
		e.wantStatus(res.Workflow, job.WorkflowSucceeded)
		e.wantMemberCounts(res.Workflow)
	})

	// Status projection: Failed when a member dead-letters, Cancelled when
	// none failed and some was cancelled.
	s.run(t, "FailedAndCancelled", func(t *testing.T, e *env) {
		q := "wf-f"
		res := e.newWorkflow("f", withMax(q, 1), child(q, onSuccess, store.InBatch(0)))
		j := e.claimOne(w1, q)
		e.reportApplied(w1, failed(j, 0))
		e.wantCancelledBy(res.Jobs[1], job.CancelCauseParentFailure)
		e.wantStatus(res.Workflow, job.WorkflowFailed)
		e.wantMemberCounts(res.Workflow)

		q2 := "wf-c"
		c := e.newWorkflow("c", newJob(q2), child(q2, onSuccess, store.InBatch(0)), newJob(q2))
		running := e.claimOne(w1, q2)
		auditBefore, err := e.s.AuditList(e.ctx, store.AuditListParams{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := e.s.WorkflowCancel(e.ctx, store.WorkflowActionParams{ID: c.Workflow, Actor: actor})
		if err != nil {
			t.Fatalf("WorkflowCancel: %v", err)
		}
		if w.Status() != job.WorkflowRunning || w.Counts[job.StateRunning] != 1 {
			t.Fatalf("after cancel the running member is still live: %+v", w)
		}
		for _, id := range c.Jobs {
			if id == running.ID {
				if !e.get(id).CancelRequested {
					t.Fatalf("running member %d has no cancel request", id)
				}
				continue
			}
			e.wantState(id, job.StateCancelled)
		}
		audit, err := e.s.AuditList(e.ctx, store.AuditListParams{})
		if err != nil || len(audit) != len(auditBefore)+1 || audit[0].Action != store.AuditWorkflowCancel || audit[0].Actor != actor {
			t.Fatalf("audit trail after WorkflowCancel: %+v, %v", audit, err)
		}
		r := running
		r.CancelRequested = true
		e.reportApplied(w1, succeeded(r))
		e.wantStatus(c.Workflow, job.WorkflowCancelled)
		e.wantMemberCounts(c.Workflow)
		_, err = e.s.WorkflowCancel(e.ctx, store.WorkflowActionParams{ID: c.Workflow + 100, Actor: actor})
		e.wantErr("cancel unknown", err, store.ErrNotFound)
	})

	testWorkflowRetry(t, s)

	// glossary, Workflow Restart: lineage recorded and audited.
	s.run(t, "RestartLineage", func(t *testing.T, e *env) {
		q := "wf"
		orig := e.newWorkflow("r", newJob(q))
		re := e.workflowInsert(store.WorkflowInsertParams{Name: "r", RestartOf: orig.Workflow, Actor: actor,
			InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{newJob(q)}}})
		if w := e.workflow(re.Workflow); w.RestartOf != orig.Workflow {
			t.Fatalf("restart lineage = %d, want %d", w.RestartOf, orig.Workflow)
		}
		audit, err := e.s.AuditList(e.ctx, store.AuditListParams{})
		if err != nil || len(audit) == 0 || audit[0].Action != store.AuditWorkflowRestart || audit[0].Actor != actor {
			t.Fatalf("audit after restart: %+v, %v", audit, err)
		}
		_, err = e.s.WorkflowInsert(e.ctx, store.WorkflowInsertParams{Name: "r", RestartOf: re.Workflow + 100,
			InsertManyParams: store.InsertManyParams{Jobs: []store.NewJob{newJob(q)}}})
		e.wantErr("restart of unknown", err, store.ErrNotFound)
	})

	// Retention keeps a Workflow's members until the whole Workflow is
	// terminal, then purges it whole.
	s.run(t, "Retention", func(t *testing.T, e *env) {
		q := "wf"
		res := e.newWorkflow("keep", newJob(q), newJob(q))
		j := e.claimOne(w1, q)
		e.reportApplied(w1, succeeded(j))
		if n := e.purge(100, 0, job.StateSucceeded); n != 0 {
			t.Fatalf("purged %d members of a running workflow", n)
		}
		e.runAll(q)
		if n := e.purge(1, 0, job.StateSucceeded); n != 1 {
			t.Fatalf("purged %d of a terminal workflow, want 1", n)
		}
		e.workflow(res.Workflow) // still there: a member remains
		if n := e.purge(100, 0, job.StateSucceeded); n != 1 {
			t.Fatalf("purged %d, want the last member", n)
		}
		_, err := e.s.WorkflowGet(e.ctx, res.Workflow)
		e.wantErr("WorkflowGet(purged)", err, store.ErrNotFound)
		for _, id := range res.Jobs {
			e.wantGone(id)
		}
	})
}

// retryGraph is the graph the retry tests run, by batch index:
//
//	0 ─┬→ 1 → 2        (on-success chain)
//	   └→ 3            (on-any-terminal)
//	4 → 5              (independent, succeeds)
//	6                  (cancelled by an operator while it waited)
//
// Job 0 dead-letters, so 1 and 2 are cancelled by its failure and 3 runs.
var retryGraph = [][]int{0: nil, 1: {0}, 2: {1}, 3: {0}, 4: nil, 5: {4}, 6: nil}

func (e *env) failedWorkflow(q string) store.WorkflowInsertResult {
	e.t.Helper()
	jobs := make([]store.NewJob, len(retryGraph))
	for i, ps := range retryGraph {
		mode := onSuccess
		if i == 3 {
			mode = onAny
		}
		refs := make([]store.ParentRef, len(ps))
		for k, p := range ps {
			refs[k] = store.InBatch(p)
		}
		jobs[i] = child(q, mode, refs...)
		if i == 0 {
			jobs[i].MaxAttempts = 1
		}
	}
	res := e.newWorkflow("retry", jobs...)
	if _, err := e.s.JobCancel(e.ctx, store.JobCancelParams{ID: res.Jobs[6], Actor: actor}); err != nil {
		e.t.Fatal(err)
	}
	for range 100 {
		js := e.claim(w1, 10, q)
		if len(js) == 0 {
			break
		}
		for _, j := range js {
			if j.ID == res.Jobs[0] {
				e.reportApplied(w1, failed(j, 0))
			} else {
				e.reportApplied(w1, succeeded(j))
			}
		}
	}
	e.wantStatus(res.Workflow, job.WorkflowFailed)
	return res
}

// expectedRetry computes, from the graph and the states alone, the batch
// indexes a retry of scope reanimates: independently of core.RetrySet.
func expectedRetry(states []job.State, causes []job.CancelCause, scope job.WorkflowRetryScope) []int {
	failed := func(i int) bool {
		return states[i] == job.StateDeadLettered || states[i] == job.StateQuarantined ||
			states[i] == job.StateCancelled && causes[i] == job.CancelCauseOperator
	}
	var out []int
	for i := range retryGraph {
		switch scope {
		case job.RetryAll:
			if states[i].Terminal() {
				out = append(out, i)
			}
		case job.RetryFailed:
			if failed(i) {
				out = append(out, i)
			}
		case job.RetryFailedAndDownstream:
			// i is in if it or any ancestor failed.
			stack, seen := []int{i}, map[int]bool{}
			for len(stack) > 0 {
				n := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if failed(n) {
					out = append(out, i)
					break
				}
				for _, p := range retryGraph[n] {
					if !seen[p] {
						seen[p] = true
						stack = append(stack, p)
					}
				}
			}
		}
	}
	return out
}

func testWorkflowRetry(t *testing.T, s *suite) {
	for _, scope := range []job.WorkflowRetryScope{job.RetryFailed, job.RetryFailedAndDownstream, job.RetryAll} {
		// glossary, Workflow Retry: reanimation in place, three scopes.
		s.run(t, "Retry/"+scope.String(), func(t *testing.T, e *env) {
			q := "wf"
			res := e.failedWorkflow(q)
			before := make([]job.Job, len(res.Jobs))
			states := make([]job.State, len(res.Jobs))
			causes := make([]job.CancelCause, len(res.Jobs))
			for i, id := range res.Jobs {
				before[i] = e.get(id)
				states[i], causes[i] = before[i].State, before[i].CancelCause
			}
			want := expectedRetry(states, causes, scope)
			wantIDs := make([]job.ID, len(want))
			for k, i := range want {
				wantIDs[k] = res.Jobs[i]
			}
			lo := e.now()
			r := e.retry(res.Workflow, scope)
			e.wantIDs("retried", r.Retried, wantIDs)
			if r.Workflow.Status() != job.WorkflowRunning {
				t.Fatalf("after retry the workflow is %s", r.Workflow.Status())
			}
			e.wantMemberCounts(res.Workflow)
			for i, id := range res.Jobs {
				j := e.get(id)
				if !slices.Contains(want, i) {
					e.unchanged(before[i])
					continue
				}
				// A retried member waits for every retried parent.
				waits := slices.ContainsFunc(retryGraph[i], func(p int) bool { return slices.Contains(want, p) })
				wantState := job.StateScheduled
				if waits {
					wantState = job.StateAwaitingParent
				}
				if j.State != wantState || j.AttemptBase != before[i].Attempt || j.Attempt != before[i].Attempt ||
					j.RetryCause != job.RetryCauseNone || j.CancelCause != job.CancelCauseNone || !j.FinalizedAt.IsZero() {
					t.Fatalf("member %d after retry = %+v, want %s with a fresh budget above attempt %d", i, j, wantState, before[i].Attempt)
				}
				if !waits {
					e.within("due", j.ScheduledAt, lo, e.now())
				}
				trs := e.transitions(id)
				if len(trs) > 0 {
					last := trs[len(trs)-1]
					if last.Via != core.ViaWorkflowRetry || last.From != before[i].State || last.State != wantState {
						t.Fatalf("member %d last transition %+v", i, last)
					}
				}
				if out, err := e.s.JobOutput(e.ctx, id); err != nil || out != nil {
					t.Fatalf("member %d keeps output %q after retry (%v)", i, out, err)
				}
			}
			// The pre-retry Attempt of job 0 is fenced: stale now and after
			// its re-claim.
			old := before[0]
			old.State = job.StateRunning
			e.reportStale(w1, succeeded(old))
			audit, err := e.s.AuditList(e.ctx, store.AuditListParams{})
			if err != nil || audit[0].Action != store.AuditWorkflowRetry || audit[0].Actor != actor {
				t.Fatalf("audit after retry: %+v, %v", audit, err)
			}
			// Run it all: no retried dependent is claimable before its
			// retried parent ended; the Workflow ends by the re-runs.
			for range 100 {
				js := e.claim(w1, 10, q)
				if len(js) == 0 {
					break
				}
				for _, j := range js {
					for _, p := range retryGraph[slices.Index(res.Jobs, j.ID)] {
						if st := e.get(res.Jobs[p]).State; !st.Terminal() {
							t.Fatalf("member %d claimed while its parent %d is %s", j.ID, res.Jobs[p], st)
						}
					}
					if j.ID == res.Jobs[0] && j.Attempt <= old.Attempt {
						t.Fatalf("re-claim of member 0 charged attempt %d, not above %d", j.Attempt, old.Attempt)
					}
					e.reportApplied(w1, succeeded(j))
				}
			}
			e.reportStale(w1, succeeded(old))
			e.wantMemberCounts(res.Workflow)
			want2 := job.WorkflowSucceeded
			if scope == job.RetryFailed {
				want2 = job.WorkflowCancelled // 1 and 2 stay Cancelled by the old failure
			}
			e.wantStatus(res.Workflow, want2)
		})
	}

	s.run(t, "Retry/Invalid", func(t *testing.T, e *env) {
		_, err := e.s.WorkflowRetry(e.ctx, store.WorkflowRetryParams{ID: 1, Scope: 0, Actor: actor})
		e.wantErr("retry scope 0", err, store.ErrInvalidParams)
		_, err = e.s.WorkflowRetry(e.ctx, store.WorkflowRetryParams{ID: 999, Scope: job.RetryAll, Actor: actor})
		e.wantErr("retry unknown", err, store.ErrNotFound)
	})
}
