package core

import (
	"slices"
	"testing"

	"github.com/backwave/backwave/job"
)

// TestRetrySet checks the three scopes of a Workflow Retry (glossary,
// Workflow Retry) on a graph 1 → 2 → 3, 1 → 4, 5 → 6, where 1
// dead-lettered, 2 and 3 were cancelled by its failure, 4 succeeded, 5 was
// cancelled by an operator and 6 is still running below it.
func TestRetrySet(t *testing.T) {
	t.Parallel()
	nodes := []RetryNode{
		{ID: 1, State: job.StateDeadLettered},
		{ID: 2, State: job.StateCancelled, CancelCause: job.CancelCauseParentFailure, Parents: []job.ID{1}},
		{ID: 3, State: job.StateCancelled, CancelCause: job.CancelCauseParentFailure, Parents: []job.ID{2}},
		{ID: 4, State: job.StateSucceeded, Parents: []job.ID{1}},
		{ID: 5, State: job.StateCancelled, CancelCause: job.CancelCauseOperator},
		{ID: 6, State: job.StateRunning, Parents: []job.ID{5}},
		{ID: 7, State: job.StateSucceeded},
		{ID: 8, State: job.StateQuarantined},
		// 9 was cancelled by an operator below 2, which stays Cancelled
		// in scope failed: it could never run, so it is left out, and so
		// is its on-success dependent 10; on-any-terminal 11 is kept.
		{ID: 9, State: job.StateCancelled, CancelCause: job.CancelCauseOperator, Parents: []job.ID{2}},
		{ID: 10, State: job.StateDeadLettered, Parents: []job.ID{9}},
		{ID: 11, State: job.StateDeadLettered, Mode: job.DependencyOnAnyTerminal, Parents: []job.ID{9}},
	}
	for _, tc := range []struct {
		scope job.WorkflowRetryScope
		want  []job.ID
	}{
		{job.RetryAll, []job.ID{1, 2, 3, 4, 5, 7, 8, 9, 10, 11}},
		{job.RetryFailed, []job.ID{1, 5, 8, 11}},
		{job.RetryFailedAndDownstream, []job.ID{1, 2, 3, 4, 5, 8, 9, 10, 11}},
		{0, nil},
	} {
		if got := RetrySet(nodes, tc.scope); !slices.Equal(got, tc.want) {
			t.Errorf("RetrySet(%s) = %v, want %v", tc.scope, got, tc.want)
		}
	}
}

// TestRecount checks the exact latch recount: an edge is counted iff its
// parent is terminal after the retry, and a job with any pending parent
// waits.
func TestRecount(t *testing.T) {
	t.Parallel()
	counted, pending := Recount([]bool{true, false, true})
	if !slices.Equal(counted, []bool{false, true, false}) || pending != 2 {
		t.Errorf("Recount = %v, %d", counted, pending)
	}
	if ReanimatedState(pending) != job.StateAwaitingParent || ReanimatedState(0) != job.StateScheduled {
		t.Error("ReanimatedState must wait while a parent is pending")
	}
	for _, from := range []job.State{job.StateSucceeded, job.StateDeadLettered, job.StateCancelled, job.StateQuarantined} {
		for _, to := range []job.State{job.StateScheduled, job.StateAwaitingParent} {
			if err := CheckEdge(from, to, ViaWorkflowRetry); err != nil {
				t.Error(err)
			}
		}
	}
	if Legal(Edge{job.StateRunning, job.StateScheduled, ViaWorkflowRetry}) {
		t.Error("Workflow Retry must not touch a live job")
	}
}
