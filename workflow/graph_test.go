package workflow_test

import (
	"slices"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/workflow"
)

func member(id backwave.JobID, s backwave.JobState, c backwave.CancelCause, parents ...backwave.JobID) backwave.WorkflowMember {
	return backwave.WorkflowMember{Job: backwave.JobInfo{ID: id, State: s, CancelCause: c}, Parents: parents}
}

// The failed path is the failed members and what their failure cancelled
// downstream — not a member an operator cancelled, not a sibling that
// succeeded.
func TestFailedPathAndDepths(t *testing.T) {
	t.Parallel()
	none, pf, op := backwave.CancelCauseNone, backwave.CancelCauseParentFailure, backwave.CancelCauseOperator
	d := backwave.WorkflowDetail{Members: []backwave.WorkflowMember{
		member(1, backwave.StateSucceeded, none),
		member(2, backwave.StateDeadLettered, none, 1),
		member(3, backwave.StateSucceeded, none, 1),
		member(4, backwave.StateCancelled, pf, 2, 3),
		member(5, backwave.StateCancelled, pf, 4),
		member(6, backwave.StateCancelled, op, 3),
		member(7, backwave.StateQuarantined, none, 6),
	}}
	path := workflow.FailedPath(d)
	var got []backwave.JobID
	for id := range path {
		got = append(got, id)
	}
	slices.Sort(got)
	if want := []backwave.JobID{2, 4, 5, 7}; !slices.Equal(got, want) {
		t.Errorf("failed path %v, want %v", got, want)
	}
	if got, want := workflow.Depths(d), []int{0, 1, 1, 2, 3, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("depths %v, want %v", got, want)
	}
	if len(workflow.FailedPath(backwave.WorkflowDetail{Members: d.Members[:1]})) != 0 {
		t.Error("a Workflow without failures has a failed path")
	}
}
