package backwave_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// wfStep is a Workflow member in these tests; N names it in its graph.
type wfStep struct {
	N int `json:"n"`
}

func (wfStep) WireName() string { return "test.wf_step" }

// enqueueClient is a Client that only enqueues: no Worker Group, so the
// tests drive each Attempt through the store themselves.
func enqueueClient(t *testing.T, st store.Store) *backwave.Client {
	t.Helper()
	c, err := backwave.NewClient(st, backwave.Config{Logger: testLogger(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// graph builds the params of a Workflow of len(parents) steps, step i
// naming parents[i] by batch index, on-success.
func graph(parents [][]int) []backwave.EnqueueParams {
	out := make([]backwave.EnqueueParams, len(parents))
	for i, ps := range parents {
		out[i] = backwave.EnqueueParams{Args: wfStep{N: i}}
		if len(ps) > 0 {
			out[i].Options = []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, ps...)}
		}
	}
	return out
}

// drive claims every due job and applies the outcome fail says for it
// (dead-letter at once) or success, until nothing is due.
func drive(t *testing.T, st store.Store, fail func(id job.ID) bool) {
	t.Helper()
	ctx := context.Background()
	for range 1000 {
		jobs, err := st.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{backwave.DefaultQueue}, Limit: 100, LeaseDuration: 60e9})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			return
		}
		var outs []store.Outcome
		for _, j := range jobs {
			r := core.ResultSucceeded
			if fail(j.ID) {
				r = core.ResultFailedPermanently
			}
			info := core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.Ceiling()}
			outs = append(outs, store.Outcome{Outcome: core.Decide(info, r, core.RetryPolicy{})})
		}
		if _, err := st.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: outs}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("drive: the queue never drained")
}

// downstream returns, by batch index, every step reachable from a step in
// from along parent → dependent edges, from included.
func downstream(parents [][]int, from []int) []int {
	in := map[int]bool{}
	for _, f := range from {
		in[f] = true
	}
	for changed := true; changed; {
		changed = false
		for i, ps := range parents {
			for _, p := range ps {
				if in[p] && !in[i] {
					in[i], changed = true, true
				}
			}
		}
	}
	out := slices.Collect(maps.Keys(in))
	slices.Sort(out)
	return out
}

// The retry graph: two diamonds in a row and a side branch.
//
//	0 → {1, 2} → 3 → {4, 5} → 6;  0 → 7 → 8
var retryParents = [][]int{nil, {0}, {0}, {1, 2}, {3}, {3}, {4, 5}, {0}, {7}}

// TestWorkflowRetryScopes: Admin.RetryWorkflow re-runs exactly the set the
// scope names, computed here from the graph (glossary, Workflow Retry):
// "failed" only the failed node, "failed+downstream" the failed node and
// everything below it, even Succeeded and Cancelled-by-failure dependents.
func TestWorkflowRetryScopes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scope backwave.WorkflowRetryScope
		final backwave.WorkflowStatus
	}{
		{backwave.RetryFailed, backwave.WorkflowCancelled},
		{backwave.RetryFailedAndDownstream, backwave.WorkflowSucceeded},
		{backwave.RetryAll, backwave.WorkflowSucceeded},
	} {
		t.Run(tc.scope.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := memstore.New(memstore.Options{})
			c := enqueueClient(t, st)
			wf, ids, err := c.EnqueueWorkflow(ctx, backwave.NewWorkflow{Name: "retry"}, graph(retryParents))
			if err != nil {
				t.Fatal(err)
			}
			// Step 4 fails: 6 is cancelled by its failure; 5 succeeds.
			drive(t, st, func(id job.ID) bool { return id == ids[4] })
			admin, err := c.Admin("ops:retry")
			if err != nil {
				t.Fatal(err)
			}
			if w, _ := admin.WorkflowStatus(ctx, wf); w.Status != backwave.WorkflowFailed {
				t.Fatalf("before the retry the workflow is %s", w.Status)
			}
			var want []int
			switch tc.scope {
			case backwave.RetryFailed:
				want = []int{4}
			case backwave.RetryFailedAndDownstream:
				want = downstream(retryParents, []int{4})
			case backwave.RetryAll:
				want = downstream(retryParents, []int{0})
			}
			attempts := map[job.ID]job.Attempt{}
			for _, id := range ids {
				attempts[id] = getJob(t, st, id).Attempt
			}
			w, err := admin.RetryWorkflow(ctx, wf, tc.scope)
			if err != nil || w.Status != backwave.WorkflowRunning {
				t.Fatalf("RetryWorkflow = %+v, %v", w, err)
			}
			drive(t, st, func(job.ID) bool { return false })
			for i, id := range ids {
				j := getJob(t, st, id)
				rerun := j.Attempt > attempts[id]
				if rerun != slices.Contains(want, i) {
					t.Errorf("step %d: re-ran %v (attempt %d → %d), want re-run %v", i, rerun, attempts[id], j.Attempt, slices.Contains(want, i))
				}
			}
			if w, _ := admin.WorkflowStatus(ctx, wf); w.Status != tc.final {
				t.Fatalf("after the re-runs the workflow is %s (%v), want %s", w.Status, w.Counts, tc.final)
			}
			audit, err := admin.Audit(ctx, backwave.AuditListParams{})
			if err != nil || len(audit.Items) == 0 || audit.Items[0].Action != backwave.AuditWorkflowRetry || audit.Items[0].Actor != "ops:retry" {
				t.Fatalf("audit = %+v, %v", audit, err)
			}
		})
	}
}

// TestWorkflowRestartShape: Admin.RestartWorkflow makes a new Workflow whose
// members have fresh ids and the same shape — Wire Name, payload, Queue,
// edges and mode — linked to the original (glossary, Workflow Restart).
func TestWorkflowRestartShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	c := enqueueClient(t, st)
	params := graph(retryParents)
	params[8].Options = []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnAnyTerminal, 7), backwave.WithQueue("side")}
	wf, _, err := c.EnqueueWorkflow(ctx, backwave.NewWorkflow{Name: "shape"}, params)
	if err != nil {
		t.Fatal(err)
	}
	drive(t, st, func(job.ID) bool { return false })
	admin, _ := c.Admin("ops:restart")
	re, err := admin.RestartWorkflow(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	if re.ID == wf || re.RestartOf != wf || re.Name != "shape" || re.Status != backwave.WorkflowRunning {
		t.Fatalf("restart = %+v", re)
	}
	a, _ := admin.Workflow(ctx, wf)
	b, err := admin.Workflow(ctx, re.ID)
	if err != nil || len(a.Members) != len(b.Members) {
		t.Fatalf("restart members %d vs %d, %v", len(b.Members), len(a.Members), err)
	}
	old := map[backwave.JobID]int{}
	fresh := map[backwave.JobID]int{}
	for i := range a.Members {
		old[a.Members[i].Job.ID], fresh[b.Members[i].Job.ID] = i, i
	}
	for i := range a.Members {
		x, y := a.Members[i], b.Members[i]
		if _, reused := old[y.Job.ID]; reused {
			t.Fatalf("member %d kept id %d", i, y.Job.ID)
		}
		if x.Job.WireName != y.Job.WireName || x.Job.Queue != y.Job.Queue || x.Mode != y.Mode || len(x.Parents) != len(y.Parents) ||
			y.Job.State == backwave.StateSucceeded {
			t.Fatalf("member %d: %+v vs %+v", i, x, y)
		}
		xa, _ := admin.Job(ctx, x.Job.ID)
		ya, _ := admin.Job(ctx, y.Job.ID)
		if string(xa.Job.Payload) != string(ya.Job.Payload) {
			t.Fatalf("member %d payload %s vs %s", i, xa.Job.Payload, ya.Job.Payload)
		}
		for k := range x.Parents {
			if old[x.Parents[k]] != fresh[y.Parents[k]] {
				t.Fatalf("member %d parent %d is step %d, was step %d", i, k, fresh[y.Parents[k]], old[x.Parents[k]])
			}
		}
	}
	audit, _ := admin.Audit(ctx, backwave.AuditListParams{})
	if len(audit.Items) == 0 || audit.Items[0].Action != backwave.AuditWorkflowRestart {
		t.Fatalf("audit = %+v", audit)
	}
	if _, err := admin.RestartWorkflow(ctx, re.ID+100); !errors.Is(err, backwave.ErrNotFound) {
		t.Fatalf("restart of unknown = %v", err)
	}
}

// TestWorkflowMembership: a member's parent must be a member of the same
// Workflow (refused with ErrInvalidJob and ErrParentOutsideWorkflow), and
// an append reopens a drained Workflow's status (glossary, Workflow).
func TestWorkflowMembership(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	c := enqueueClient(t, st)
	loose, err := c.Enqueue(ctx, wfStep{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.EnqueueWorkflow(ctx, backwave.NewWorkflow{Name: "w"}, []backwave.EnqueueParams{
		{Args: wfStep{}, Options: []backwave.EnqueueOption{backwave.WithParents(backwave.OnSuccess, loose)}}})
	if !errors.Is(err, backwave.ErrInvalidJob) || !errors.Is(err, backwave.ErrParentOutsideWorkflow) {
		t.Fatalf("new workflow naming a loose job = %v", err)
	}
	wf, ids, err := c.EnqueueWorkflow(ctx, backwave.NewWorkflow{Name: "w"}, graph([][]int{nil}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.AppendWorkflow(ctx, wf, []backwave.EnqueueParams{
		{Args: wfStep{}, Options: []backwave.EnqueueOption{backwave.WithParents(backwave.OnSuccess, loose)}}})
	if !errors.Is(err, backwave.ErrInvalidJob) || !errors.Is(err, backwave.ErrParentOutsideWorkflow) {
		t.Fatalf("append naming a loose job = %v", err)
	}
	if _, err := c.AppendWorkflow(ctx, wf+9, graph([][]int{nil})); !errors.Is(err, backwave.ErrNotFound) {
		t.Fatalf("append to unknown = %v", err)
	}
	for _, name := range []string{"", " padded", "bad\x01"} {
		if _, _, err := c.EnqueueWorkflow(ctx, backwave.NewWorkflow{Name: name}, graph([][]int{nil})); !errors.Is(err, backwave.ErrInvalidJob) {
			t.Errorf("name %q = %v, want ErrInvalidJob", name, err)
		}
	}
	if _, _, err := c.EnqueueWorkflow(ctx, backwave.NewWorkflow{Name: "u"}, []backwave.EnqueueParams{
		{Args: wfStep{}, Options: []backwave.EnqueueOption{backwave.WithUnique("k", backwave.UniqueWhileLive())}}}); !errors.Is(err, backwave.ErrInvalidJob) {
		t.Errorf("unique member = %v, want ErrInvalidJob", err)
	}
	drive(t, st, func(job.ID) bool { return false })
	admin, _ := c.Admin("ops")
	if w, _ := admin.WorkflowStatus(ctx, wf); w.Status != backwave.WorkflowSucceeded {
		t.Fatalf("drained workflow is %s", w.Status)
	}
	if _, err := c.AppendWorkflow(ctx, wf, []backwave.EnqueueParams{
		{Args: wfStep{}, Options: []backwave.EnqueueOption{backwave.WithParents(backwave.OnSuccess, ids[0])}}}); err != nil {
		t.Fatal(err)
	}
	if w, _ := admin.WorkflowStatus(ctx, wf); w.Status != backwave.WorkflowRunning || w.Members != 2 {
		t.Fatalf("after the append the workflow is %+v", w)
	}
	page, err := admin.Workflows(ctx, backwave.WorkflowListParams{Status: backwave.WorkflowRunning})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != wf {
		t.Fatalf("Workflows(running) = %+v, %v", page, err)
	}
	cw, err := admin.CancelWorkflow(ctx, wf)
	if err != nil || cw.Status != backwave.WorkflowCancelled {
		t.Fatalf("CancelWorkflow = %+v, %v", cw, err)
	}
}
