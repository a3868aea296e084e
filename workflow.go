package backwave

import (
	"fmt"
	"time"

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
type WorkflowStatus = job.WorkflowStatus

// The Workflow statuses.
const (
	// WorkflowRunning: some member is live (Scheduled, Awaiting Parent or
	// Running).
	WorkflowRunning = job.WorkflowRunning
	// WorkflowSucceeded: every member Succeeded.
	WorkflowSucceeded = job.WorkflowSucceeded
	// WorkflowFailed: every member is terminal and some member is
	// Dead-Lettered or Quarantined.
	WorkflowFailed = job.WorkflowFailed
	// WorkflowCancelled: every member is terminal, none Dead-Lettered or
	// Quarantined, and some member Cancelled.
	WorkflowCancelled = job.WorkflowCancelled
)

// ParseWorkflowStatus reads a status by its name: "running", "succeeded",
// "failed" or "cancelled".
func ParseWorkflowStatus(s string) (WorkflowStatus, error) {
	st, err := job.ParseWorkflowStatus(s)
	if err != nil {
		return 0, fmt.Errorf("backwave: %w: unknown workflow status %q", ErrInvalidParams, s)
	}
	return st, nil
}

// WorkflowRetryScope is which terminal members Admin.RetryWorkflow
// reanimates (glossary, Workflow Retry).
type WorkflowRetryScope = job.WorkflowRetryScope

// The three scopes of a Workflow Retry.
const (
	// RetryAll reanimates every terminal member, Succeeded ones included.
	RetryAll = job.RetryAll
	// RetryFailed reanimates only the failed members: Dead-Lettered,
	// Quarantined, and Cancelled by an operator. A member Cancelled because
	// a parent failed stays Cancelled.
	RetryFailed = job.RetryFailed
	// RetryFailedAndDownstream reanimates the failed members and every
	// terminal member downstream of one — previously Succeeded dependents
	// and those Cancelled by the failure included: resume from failure.
	RetryFailedAndDownstream = job.RetryFailedAndDownstream
)

// ParseWorkflowRetryScope reads a scope by its name: "all", "failed" or
// "failed+downstream".
func ParseWorkflowRetryScope(s string) (WorkflowRetryScope, error) {
	sc, err := job.ParseWorkflowRetryScope(s)
	if err != nil {
		return 0, fmt.Errorf("backwave: %w: unknown workflow retry scope %q", ErrInvalidParams, s)
	}
	return sc, nil
}

// WorkflowInfo is a Workflow as the Monitor shows it: its row and the
// status its members' states project.
type WorkflowInfo struct {
	ID     WorkflowID
	Name   string
	Status WorkflowStatus
	// CreatedAt is when the Workflow was created, on the store's clock.
	CreatedAt time.Time
	// Members is the member count.
	Members int
	// Counts are the members by state; a state without members is absent.
	Counts map[JobState]int
	// RestartOf is the Workflow this one is the Workflow Restart of; zero
	// unless Admin.RestartWorkflow created it.
	RestartOf WorkflowID
}

// WorkflowMember is one member of a Workflow with its Dependency edges.
type WorkflowMember struct {
	Job JobInfo
	// Parents are the member's Dependency parents, ascending; every one is
	// a member of the same Workflow.
	Parents []JobID
	// Mode is the member's Dependency mode; meaningful when it has parents.
	Mode DependencyMode
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

func workflowInfoOf(w store.WorkflowInfo) WorkflowInfo {
	counts := make(map[JobState]int, len(w.Counts))
	n := 0
	for s, c := range w.Counts {
		if c != 0 {
			counts[JobState(s)] = c
			n += c
		}
	}
	return WorkflowInfo{ID: w.ID, Name: w.Name, Status: w.Status(), CreatedAt: w.CreatedAt,
		Members: n, Counts: counts, RestartOf: w.RestartOf}
}

func workflowMemberOf(m store.WorkflowMember) WorkflowMember {
	return WorkflowMember{Job: jobInfoOf(m.Job), Parents: m.Parents, Mode: DependencyMode(m.Mode)}
}
