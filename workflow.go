package backwave

import (
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// WorkflowID identifies a Workflow (glossary, Workflow): the user-facing
// grouping and identity over jobs connected by Dependency edges. The store
// assigns it; ids sort by creation.
type WorkflowID = job.WorkflowID

// ErrParentOutsideWorkflow is wrapped, with ErrInvalidJob, when a member of
// a Workflow names as a Dependency parent a job that is not a member of the
// same Workflow. Nothing is stored.
var ErrParentOutsideWorkflow = store.ErrParentOutsideWorkflow

// NewWorkflow is the identity and config of a Workflow created with its
// first members (Client.EnqueueWorkflow).
type NewWorkflow struct {
	// Name names the Workflow; required: valid UTF-8 of at most 1,024
	// bytes, without control characters or leading or trailing spaces.
	// Names need not be unique; the id is the identity.
	Name string
}

// WorkflowStatus is a Workflow's status: always a projection of its
// members' states, never stored. Its zero value is no status (a list
// filter that keeps every Workflow).
type WorkflowStatus uint8

// The Workflow statuses. Their values are the store's.
const (
	// WorkflowRunning: some member is live (Scheduled, Awaiting Parent or
	// Running).
	WorkflowRunning WorkflowStatus = WorkflowStatus(job.WorkflowRunning)
	// WorkflowSucceeded: every member Succeeded.
	WorkflowSucceeded WorkflowStatus = WorkflowStatus(job.WorkflowSucceeded)
	// WorkflowFailed: every member is terminal and some member is
	// Dead-Lettered or Quarantined.
	WorkflowFailed WorkflowStatus = WorkflowStatus(job.WorkflowFailed)
	// WorkflowCancelled: every member is terminal, none Dead-Lettered or
	// Quarantined, and some member Cancelled.
	WorkflowCancelled WorkflowStatus = WorkflowStatus(job.WorkflowCancelled)
)

// String returns the status's name: "running", "succeeded", "failed" or
// "cancelled".
func (s WorkflowStatus) String() string { return job.WorkflowStatus(s).String() }

// ParseWorkflowStatus reads a status by its name: "running", "succeeded",
// "failed" or "cancelled". Any other text is an error wrapping
// ErrInvalidParams.
func ParseWorkflowStatus(s string) (WorkflowStatus, error) {
	st, err := job.ParseWorkflowStatus(s)
	if err != nil {
		return 0, fmt.Errorf("backwave: %w: unknown workflow status %q", ErrInvalidParams, s)
	}
	return WorkflowStatus(st), nil
}

// WorkflowRetryScope is which terminal members Admin.RetryWorkflow
// reanimates (glossary, Workflow Retry).
type WorkflowRetryScope uint8

// The three scopes of a Workflow Retry. Their values are the store's.
const (
	// RetryAll reanimates every terminal member, Succeeded ones included.
	RetryAll WorkflowRetryScope = WorkflowRetryScope(job.RetryAll)
	// RetryFailed reanimates only the failed members: Dead-Lettered,
	// Quarantined, and Cancelled by an operator. A member Cancelled because
	// a parent failed stays Cancelled.
	RetryFailed WorkflowRetryScope = WorkflowRetryScope(job.RetryFailed)
	// RetryFailedAndDownstream reanimates the failed members and every
	// terminal member downstream of one — previously Succeeded dependents
	// and those Cancelled by the failure included: resume from failure.
	RetryFailedAndDownstream WorkflowRetryScope = WorkflowRetryScope(job.RetryFailedAndDownstream)
)

// String returns the scope's name: "all", "failed" or "failed+downstream".
func (s WorkflowRetryScope) String() string { return job.WorkflowRetryScope(s).String() }

// ParseWorkflowRetryScope reads a scope by its name: "all", "failed" or
// "failed+downstream". Any other text is an error wrapping
// ErrInvalidParams.
func ParseWorkflowRetryScope(s string) (WorkflowRetryScope, error) {
	sc, err := job.ParseWorkflowRetryScope(s)
	if err != nil {
		return 0, fmt.Errorf("backwave: %w: unknown workflow retry scope %q", ErrInvalidParams, s)
	}
	return WorkflowRetryScope(sc), nil
}

// WorkflowDetail is a Workflow with all its members: the graph view.
type WorkflowDetail struct {
	WorkflowInfo
	// Members are every member, in ascending id order.
	Members []WorkflowMember
}

// WorkflowListParams filter and page Admin.Workflows.
type WorkflowListParams struct {
	PageParams
	// Status, if non-zero, keeps the Workflows whose derived status it is;
	// the zero WorkflowStatus keeps every Workflow.
	Status WorkflowStatus
	// Name, if set, keeps the Workflows of exactly that name.
	Name string
}
