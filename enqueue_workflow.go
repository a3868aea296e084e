package backwave

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/backwave/backwave/store"
)

// EnqueueWorkflow creates a Workflow named w.Name and stores params as its
// first members, all in one atomic store call (glossary, Workflow). Members
// name their parents among params with WithParentsInBatch; WithParents may
// name only members of the same Workflow, and none exist yet, so it is
// refused with an error wrapping ErrInvalidJob and ErrParentOutsideWorkflow.
// A member cannot use WithUnique. It returns the Workflow's id and the
// members' ids in params order. Invalid input stores nothing and wraps
// ErrInvalidJob.
func (c *Client) EnqueueWorkflow(ctx context.Context, w NewWorkflow, params []EnqueueParams) (WorkflowID, []JobID, error) {
	res, err := c.workflowInsert(ctx, nil, "enqueue workflow", store.WorkflowInsertParams{Name: w.Name}, params)
	return res.Workflow, res.Jobs, err
}

// EnqueueWorkflowTx is EnqueueWorkflow inside tx, a transaction the
// application began on its store's database (Transactional Enqueue, see
// Tx and EnqueueManyTx): the Workflow and its members commit or roll back
// with the application's own writes. A tx the store cannot use wraps
// ErrTxUnsupported.
func (c *Client) EnqueueWorkflowTx(ctx context.Context, tx Tx, w NewWorkflow, params []EnqueueParams) (WorkflowID, []JobID, error) {
	res, err := c.workflowInsert(ctx, &txOf{tx}, "enqueue workflow", store.WorkflowInsertParams{Name: w.Name}, params)
	return res.Workflow, res.Jobs, err
}

// AppendWorkflow adds params as members of the stored Workflow id, live or
// drained, in one atomic store call; new live members reopen a drained
// Workflow's derived status (it is Running again). WithParents may name
// existing members of the same Workflow only — any other job is refused by
// the store with an error wrapping ErrInvalidJob and
// ErrParentOutsideWorkflow — and WithParentsInBatch names other members of
// the same call. Edges of existing members never change. An unknown id is
// an error wrapping ErrNotFound. It returns the new members' ids in params
// order.
func (c *Client) AppendWorkflow(ctx context.Context, id WorkflowID, params []EnqueueParams) ([]JobID, error) {
	res, err := c.workflowInsert(ctx, nil, fmt.Sprintf("append to workflow %d", id), store.WorkflowInsertParams{Workflow: id}, params)
	return res.Jobs, err
}

// AppendWorkflowTx is AppendWorkflow inside tx (see EnqueueWorkflowTx).
func (c *Client) AppendWorkflowTx(ctx context.Context, tx Tx, id WorkflowID, params []EnqueueParams) ([]JobID, error) {
	res, err := c.workflowInsert(ctx, &txOf{tx}, fmt.Sprintf("append to workflow %d", id), store.WorkflowInsertParams{Workflow: id}, params)
	return res.Jobs, err
}

// txOf carries a caller's transaction; a nil *txOf means none.
type txOf struct{ tx Tx }

// workflowInsert builds the members of params exactly as EnqueueMany builds
// jobs and inserts them into the Workflow p names (or a new one), inside
// tx if given.
func (c *Client) workflowInsert(ctx context.Context, tx *txOf, what string, p store.WorkflowInsertParams, params []EnqueueParams) (store.WorkflowInsertResult, error) {
	if p.Workflow < 0 {
		return store.WorkflowInsertResult{}, fmt.Errorf("backwave: %s: %w: workflow id %d", what, ErrInvalidJob, p.Workflow)
	}
	if p.Workflow == 0 {
		if err := store.ValidateWorkflowName(p.Name); err != nil {
			return store.WorkflowInsertResult{}, fmt.Errorf("backwave: %s: %w: %w", what, ErrInvalidJob, err)
		}
	}
	if len(params) == 0 {
		return store.WorkflowInsertResult{}, fmt.Errorf("backwave: %s: %w: a workflow needs at least one member", what, ErrInvalidJob)
	}
	jobs, err := c.newJobs(params)
	if err != nil {
		return store.WorkflowInsertResult{}, err
	}
	for i, j := range jobs {
		if j.Unique.Key != "" {
			return store.WorkflowInsertResult{}, fmt.Errorf("backwave: %s: jobs[%d]: %w: a workflow member cannot use WithUnique", what, i, ErrInvalidJob)
		}
		if p.Workflow == 0 && len(store.ExistingParents(jobs[i:i+1])) > 0 {
			return store.WorkflowInsertResult{}, fmt.Errorf("backwave: %s: jobs[%d]: %w: %w: WithParents names a job, but a new workflow has no members yet (use WithParentsInBatch)",
				what, i, ErrInvalidJob, ErrParentOutsideWorkflow)
		}
	}
	p.Jobs = jobs
	var res store.WorkflowInsertResult
	where := " as workflow " + strconv.Quote(p.Name)
	if p.Workflow != 0 {
		where = " to workflow " + p.Workflow.String()
	}
	_, err = c.insertThrough(ctx, jobs, tx != nil, where, func(ctx context.Context) ([]store.InsertResult, error) {
		var err error
		if tx == nil {
			ws, werr := workflowsOf(c.store)
			if werr != nil {
				return nil, werr
			}
			res, err = ws.WorkflowInsert(ctx, p)
		} else {
			ins, ok := c.store.(store.TxWorkflowInserter)
			if !ok {
				return nil, fmt.Errorf("%w: the Client's store, a %T, has no Transactional Enqueue", ErrTxUnsupported, c.store)
			}
			res, err = ins.WorkflowInsertInTx(ctx, tx.tx, p)
		}
		return insertedResults(res.Jobs), err
	})
	if err != nil {
		return store.WorkflowInsertResult{}, err
	}
	if tx == nil {
		c.wakeLocal(jobs)
		c.logEnqueued(ctx, "workflow member enqueued", jobs, res.Jobs)
	} else {
		c.logEnqueued(ctx, "workflow member enqueued in the caller's transaction", jobs, res.Jobs)
	}
	return res, nil
}

// errNoWorkflows is wrapped when a store has no Workflow storage.
var errNoWorkflows = errors.New("the store keeps no Workflows")

// workflowsOf returns s's Workflow storage.
func workflowsOf(s store.Store) (store.Workflows, error) {
	ws, ok := s.(store.Workflows)
	if !ok {
		return nil, fmt.Errorf("%w: %T", errNoWorkflows, s)
	}
	return ws, nil
}
