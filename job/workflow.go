package job

import (
	"fmt"
	"strconv"
)

// WorkflowID identifies a Workflow: the user-facing grouping of jobs
// connected by Dependency edges. The store assigns it when the Workflow is
// created; ids sort by creation and are never reused within one store. The
// Core never reads it: a Workflow lives above the determinism boundary.
type WorkflowID int64

// String renders the id in decimal.
func (id WorkflowID) String() string { return strconv.FormatInt(int64(id), 10) }

// WorkflowStatus is a Workflow's status: always a projection of its members'
// states (WorkflowStatusOf), never stored.
type WorkflowStatus uint8

// The Workflow statuses. The zero value is no status, so a filter can tell
// "any status" apart.
const (
	// WorkflowRunning: some member is live (Scheduled, Awaiting Parent or
	// Running). A Workflow with no members yet is Running too.
	WorkflowRunning WorkflowStatus = iota + 1
	// WorkflowSucceeded: every member Succeeded.
	WorkflowSucceeded
	// WorkflowFailed: every member is terminal and some member is
	// Dead-Lettered or Quarantined.
	WorkflowFailed
	// WorkflowCancelled: every member is terminal, none Dead-Lettered or
	// Quarantined, and some member Cancelled.
	WorkflowCancelled
)

var workflowStatusNames = [...]string{
	WorkflowRunning:   "running",
	WorkflowSucceeded: "succeeded",
	WorkflowFailed:    "failed",
	WorkflowCancelled: "cancelled",
}

// String returns the status's name: "running", "succeeded", "failed" or
// "cancelled".
func (s WorkflowStatus) String() string {
	if s.Valid() {
		return workflowStatusNames[s]
	}
	return "workflow_status(" + strconv.Itoa(int(s)) + ")"
}

// Valid reports whether s is one of the four statuses.
func (s WorkflowStatus) Valid() bool {
	return s >= WorkflowRunning && int(s) < len(workflowStatusNames)
}

// ParseWorkflowStatus is the inverse of WorkflowStatus.String.
func ParseWorkflowStatus(s string) (WorkflowStatus, error) {
	for st, name := range workflowStatusNames {
		if name != "" && name == s {
			return WorkflowStatus(st), nil
		}
	}
	return 0, fmt.Errorf("job: unknown workflow status %q", s)
}

// WorkflowStatusOf projects a Workflow's status from how many of its members
// are in each state: Running while any member is live (or there is none),
// otherwise Failed if any member is Dead-Lettered or Quarantined, otherwise
// Cancelled if any is Cancelled, otherwise Succeeded. It reads only the
// counts, so a store that maintains them answers at any Workflow size in
// one lookup.
func WorkflowStatusOf(counts map[State]int) WorkflowStatus {
	total := 0
	for s, n := range counts {
		if n > 0 && s.Live() {
			return WorkflowRunning
		}
		total += n
	}
	switch {
	case total == 0:
		return WorkflowRunning
	case counts[StateDeadLettered] > 0 || counts[StateQuarantined] > 0:
		return WorkflowFailed
	case counts[StateCancelled] > 0:
		return WorkflowCancelled
	default:
		return WorkflowSucceeded
	}
}

// WorkflowRetryScope is which terminal members a Workflow Retry reanimates.
type WorkflowRetryScope uint8

// The three scopes of a Workflow Retry.
const (
	// RetryAll reanimates every terminal member, Succeeded ones included.
	RetryAll WorkflowRetryScope = iota + 1
	// RetryFailed reanimates only the failed members (WorkflowFailedMember):
	// Dead-Lettered, Quarantined, and Cancelled by an operator. A member
	// Cancelled because a parent failed is not itself a failure and stays
	// Cancelled.
	RetryFailed
	// RetryFailedAndDownstream reanimates the failed members and every
	// terminal member downstream of one along Dependency edges — the
	// resume-from-failure scope, re-running previously Succeeded dependents
	// and those Cancelled by the failure.
	RetryFailedAndDownstream
)

var retryScopeNames = [...]string{
	RetryAll:                 "all",
	RetryFailed:              "failed",
	RetryFailedAndDownstream: "failed+downstream",
}

// String returns the scope's name: "all", "failed" or "failed+downstream".
func (s WorkflowRetryScope) String() string {
	if s.Valid() {
		return retryScopeNames[s]
	}
	return "workflow_retry_scope(" + strconv.Itoa(int(s)) + ")"
}

// Valid reports whether s is one of the three scopes.
func (s WorkflowRetryScope) Valid() bool { return s >= RetryAll && int(s) < len(retryScopeNames) }

// ParseWorkflowRetryScope is the inverse of WorkflowRetryScope.String.
func ParseWorkflowRetryScope(s string) (WorkflowRetryScope, error) {
	for sc, name := range retryScopeNames {
		if name != "" && name == s {
			return WorkflowRetryScope(sc), nil
		}
	}
	return 0, fmt.Errorf("job: unknown workflow retry scope %q", s)
}

// WorkflowFailedMember reports whether a member in state s with cancel cause
// c counts as failed for a Workflow Retry: Dead-Lettered, Quarantined, or
// Cancelled by an operator. A member Cancelled by a parent's failure did not
// fail itself; it is downstream of a failure.
func WorkflowFailedMember(s State, c CancelCause) bool {
	switch s {
	case StateDeadLettered, StateQuarantined:
		return true
	case StateCancelled:
		return c != CancelCauseParentFailure
	}
	return false
}
