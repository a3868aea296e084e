package store

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/backwave/backwave/job"
)

// ErrParentOutsideWorkflow: a member of a Workflow names, as a Dependency
// parent, a job that is not a member of the same Workflow (a job of no
// Workflow, of another one, or an id the store does not hold). Always
// wrapped after ErrInvalidParams. Nothing was inserted.
var ErrParentOutsideWorkflow = errors.New("dependency parent outside the workflow")

// Workflows is the storage of Workflows: the user-facing grouping and
// identity over jobs connected by Dependency edges (glossary, Workflow).
//
// A Workflow is a stored row holding only its identity (a sortable id), its
// name and its config (RestartOf, the lineage of a Workflow Restart). Its
// status is never stored: it is a projection of its members' states
// (job.WorkflowStatusOf) over per-state member counts that the store keeps
// as members move, so reading it costs one bounded lookup at any Workflow
// size. A job belongs to at most one Workflow, fixed at its insert, and
// every Dependency parent of a member is a member of the same Workflow: the
// store enforces it at the insert (ErrParentOutsideWorkflow).
//
// The Core never reads a Workflow, with one exception that is an Operator
// Action: WorkflowRetry moves terminal members back to a live state along
// the core.ViaWorkflowRetry edges.
type Workflows interface {
	// WorkflowInsert inserts p.Jobs, in one atomic step, as members of a
	// Workflow: a new one named p.Name when p.Workflow is zero (created in
	// the same step), or the stored Workflow p.Workflow (an append, which
	// reopens a drained Workflow's status: its new live members make it
	// Running). Jobs are inserted as Inserter.JobInsertMany inserts them,
	// latches and InsertOrder included; an Existing parent must be a member
	// of the same Workflow (ErrParentOutsideWorkflow, nothing inserted). A
	// member cannot carry a unique key: a held key would leave a hole in
	// the graph (ErrInvalidParams). An append to an unknown Workflow is
	// ErrNotFound. A new Workflow with p.RestartOf set is a Workflow
	// Restart: the original must exist (ErrNotFound), and one audit record
	// (AuditWorkflowRestart, naming p.Actor) is written in the same step.
	WorkflowInsert(ctx context.Context, p WorkflowInsertParams) (WorkflowInsertResult, error)

	// WorkflowGet reads a Workflow's row and its member counts by state.
	// ErrNotFound for an unknown id.
	WorkflowGet(ctx context.Context, id job.WorkflowID) (WorkflowInfo, error)

	// WorkflowList lists Workflows newest first (descending id), filtered
	// by p, one keyset page at a time.
	WorkflowList(ctx context.Context, p WorkflowListParams) ([]WorkflowInfo, error)

	// WorkflowMembers returns every member of a Workflow in ascending id
	// order, each with its Dependency mode and parents. ErrNotFound for an
	// unknown id.
	WorkflowMembers(ctx context.Context, id job.WorkflowID) ([]WorkflowMember, error)

	// WorkflowCancel is the Operator Action that cancels every live member
	// of a Workflow at once, as one JobCancel per member would — waiting
	// members become Cancelled with cause operator (their on-success
	// dependents are cancelled by parent failure in turn), Running members
	// get CancelRequested — in one atomic step with one audit record
	// (AuditWorkflowCancel). Terminal members are left as they are; a
	// Workflow with none live is still audited. ErrNotFound for an unknown
	// id. It returns the Workflow as the action left it.
	WorkflowCancel(ctx context.Context, p WorkflowActionParams) (WorkflowInfo, error)

	// WorkflowRetry is the Operator Action Workflow Retry: it reanimates,
	// in place and under the same ids, the terminal members p.Scope names
	// (core.RetrySet, which leaves out an on-success member whose parent
	// stays terminal without succeeding: it could never run), in one
	// atomic step with one audit record
	// (AuditWorkflowRetry). Each reanimated member moves along a
	// core.ViaWorkflowRetry edge and is reset as core.Reanimate says: a
	// fresh attempt budget above the Attempt it reached (AttemptBase =
	// Attempt, as a requeue does; Attempt numbers are never reused, so any
	// late outcome of a pre-retry Attempt is stale), no Retry Cause, no
	// cancel cause or request, no Job Output, due at the store's now. The
	// latch of every reanimated member, and of every Awaiting-Parent member
	// with a reanimated parent, is recounted exactly against its parents'
	// states after the retry: a parent that is live afterwards (reanimated,
	// or live already) is uncounted, every other is counted. A reanimated
	// member with an uncounted parent is Awaiting Parent, any other is
	// Scheduled. Live members are never touched. ErrNotFound for an
	// unknown id; an invalid scope is ErrInvalidParams.
	WorkflowRetry(ctx context.Context, p WorkflowRetryParams) (WorkflowRetryResult, error)
}

// TxWorkflowInserter is WorkflowInsert inside a transaction the caller owns
// (Transactional Enqueue), for the adapters that have the capability; see
// TxInserter for what tx may be.
type TxWorkflowInserter interface {
	WorkflowInsertInTx(ctx context.Context, tx any, p WorkflowInsertParams) (WorkflowInsertResult, error)
}

// MaxWorkflowNameLen bounds a Workflow's name, in bytes.
const MaxWorkflowNameLen = 1024

// WorkflowInsertParams are the params of Workflows.WorkflowInsert.
type WorkflowInsertParams struct {
	// Workflow is the stored Workflow to append to; zero creates a new one.
	Workflow job.WorkflowID
	// Name names a new Workflow (required then, ignored on an append).
	Name string
	// RestartOf, on a new Workflow, makes it the Workflow Restart of that
	// stored Workflow: recorded as its lineage, and audited as Actor.
	RestartOf job.WorkflowID
	// Actor is recorded in the audit trail of a Restart.
	Actor Actor
	// InsertManyParams are the members to insert; at least one.
	InsertManyParams
}

// Validate checks the params of WorkflowInsert.
func (p WorkflowInsertParams) Validate() error {
	switch {
	case p.Workflow < 0:
		return fmt.Errorf("%w: workflow id %d", ErrInvalidParams, p.Workflow)
	case p.RestartOf < 0:
		return fmt.Errorf("%w: restart of workflow id %d", ErrInvalidParams, p.RestartOf)
	case p.Workflow != 0 && p.RestartOf != 0:
		return fmt.Errorf("%w: an append to workflow %d cannot be a restart", ErrInvalidParams, p.Workflow)
	case len(p.Jobs) == 0:
		return fmt.Errorf("%w: a workflow insert without jobs", ErrInvalidParams)
	}
	if p.Workflow == 0 {
		if err := ValidateWorkflowName(p.Name); err != nil {
			return err
		}
	}
	if err := p.Actor.Validate(); err != nil {
		return err
	}
	for i, j := range p.Jobs {
		if j.Unique.Key != "" {
			return fmt.Errorf("job %d: %w: a workflow member cannot carry a unique key", i, ErrInvalidParams)
		}
	}
	return p.InsertManyParams.Validate()
}

// ValidateWorkflowName accepts a non-empty valid UTF-8 name of at most
// MaxWorkflowNameLen bytes, without control characters or leading or
// trailing spaces: a Queue name's rules with a longer bound.
func ValidateWorkflowName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty workflow name", ErrInvalidParams)
	case len(name) > MaxWorkflowNameLen:
		return fmt.Errorf("%w: workflow name %s is longer than %d bytes", ErrInvalidParams, Echo(name), MaxWorkflowNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: workflow name %q is not valid UTF-8", ErrInvalidParams, name)
	case name[0] == ' ' || name[len(name)-1] == ' ':
		return fmt.Errorf("%w: workflow name %q has leading or trailing spaces", ErrInvalidParams, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: workflow name %q contains a control character", ErrInvalidParams, name)
		}
	}
	return nil
}

// WorkflowInsertResult is what WorkflowInsert did.
type WorkflowInsertResult struct {
	// Workflow is the Workflow the members joined (the new one's id when
	// created).
	Workflow job.WorkflowID
	// Jobs are the members' ids in input order.
	Jobs []job.ID
}

// WorkflowInfo is a Workflow's row and its member counts.
type WorkflowInfo struct {
	ID        job.WorkflowID
	Name      string
	CreatedAt time.Time
	// RestartOf is the Workflow this one restarts; zero if none.
	RestartOf job.WorkflowID
	// Counts are the members by state; a state without members may be
	// absent.
	Counts map[job.State]int
}

// Members returns the member count.
func (w WorkflowInfo) Members() int {
	n := 0
	for _, c := range w.Counts {
		n += c
	}
	return n
}

// Status is the Workflow's derived status (job.WorkflowStatusOf).
func (w WorkflowInfo) Status() job.WorkflowStatus { return job.WorkflowStatusOf(w.Counts) }

// WorkflowMember is one member of a Workflow with its Dependency edges.
type WorkflowMember struct {
	Job job.Job
	// Mode is the member's Dependency mode; meaningful when it has parents.
	Mode job.DependencyMode
	// Parents are the member's parents, ascending.
	Parents []job.ID
}

// WorkflowListParams filter and page Workflows.WorkflowList.
type WorkflowListParams struct {
	// Status, if non-zero, keeps the Workflows whose derived status it is.
	Status job.WorkflowStatus
	// Name, if set, keeps the Workflows of exactly that name.
	Name string
	// BeforeID, if non-zero, keeps Workflows with a smaller id (keyset
	// cursor).
	BeforeID job.WorkflowID
	// Limit is the page size; 0 means 100, at most 10,000.
	Limit int
}

// PageLimit returns the effective page size.
func (p WorkflowListParams) PageLimit() int {
	if p.Limit <= 0 {
		return 100
	}
	return min(p.Limit, 10_000)
}

// Validate checks the params of WorkflowList.
func (p WorkflowListParams) Validate() error {
	switch {
	case p.Status != 0 && !p.Status.Valid():
		return fmt.Errorf("%w: %s", ErrInvalidParams, p.Status)
	case p.BeforeID < 0:
		return fmt.Errorf("%w: workflow cursor %d", ErrInvalidParams, p.BeforeID)
	case p.Limit < 0:
		return fmt.Errorf("%w: limit %d", ErrInvalidParams, p.Limit)
	}
	return nil
}

// WorkflowActionParams name the Workflow an Operator Action acts on.
type WorkflowActionParams struct {
	ID    job.WorkflowID
	Actor Actor
}

// Validate checks the params.
func (p WorkflowActionParams) Validate() error {
	if p.ID < 1 {
		return fmt.Errorf("%w: workflow id %d", ErrInvalidParams, p.ID)
	}
	return p.Actor.Validate()
}

// WorkflowRetryParams are the params of Workflows.WorkflowRetry.
type WorkflowRetryParams struct {
	ID    job.WorkflowID
	Scope job.WorkflowRetryScope
	Actor Actor
}

// Validate checks the params.
func (p WorkflowRetryParams) Validate() error {
	if !p.Scope.Valid() {
		return fmt.Errorf("%w: %s", ErrInvalidParams, p.Scope)
	}
	return WorkflowActionParams{ID: p.ID, Actor: p.Actor}.Validate()
}

// WorkflowRetryResult is what WorkflowRetry did.
type WorkflowRetryResult struct {
	// Workflow is the Workflow as the retry left it.
	Workflow WorkflowInfo
	// Retried are the reanimated members, ascending.
	Retried []job.ID
}

// WorkflowDetail is the Detail of a Workflow action's audit record: the
// Workflow's id (and the scope of a retry, the new id of a restart).
func WorkflowDetail(id job.WorkflowID, extra string) string {
	if extra == "" {
		return "workflow " + id.String()
	}
	return "workflow " + id.String() + " " + extra
}
