package backwave

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Workflows lists the Workflows p's filter keeps, newest first, one page
// at a time, each with its derived status and member counts. An invalid
// status filter or a negative Limit is an error wrapping ErrInvalidParams.
func (a *Admin) Workflows(ctx context.Context, p WorkflowListParams) (Page[WorkflowInfo], error) {
	ws, err := workflowsOf(a.store)
	if err != nil {
		return Page[WorkflowInfo]{}, fmt.Errorf("backwave: list workflows: %w", err)
	}
	return readPage(p.PageParams, "list workflows", func(limit int) ([]store.WorkflowInfo, error) {
		return ws.WorkflowList(ctx, store.WorkflowListParams{Status: job.WorkflowStatus(p.Status), Name: p.Name, BeforeID: WorkflowID(p.Before), Limit: limit})
	}, workflowInfoOf, func(w *WorkflowInfo) Cursor { return Cursor(w.ID) })
}

// WorkflowStatus reads one Workflow's row and derived status from the
// member counts the store keeps: one bounded lookup whatever the
// Workflow's size. An unknown id is an error wrapping ErrNotFound.
func (a *Admin) WorkflowStatus(ctx context.Context, id WorkflowID) (WorkflowInfo, error) {
	ws, err := workflowsOf(a.store)
	if err != nil {
		return WorkflowInfo{}, fmt.Errorf("backwave: workflow %d: %w", id, err)
	}
	w, err := ws.WorkflowGet(ctx, id)
	if err != nil {
		return WorkflowInfo{}, actionErr(fmt.Sprintf("workflow %d", id), err)
	}
	return workflowInfoOf(w), nil
}

// Workflow returns one Workflow with every member and its Dependency
// edges: the graph view. It reads every member, so its cost grows with the
// Workflow; WorkflowStatus reads only the status. An unknown id is an error
// wrapping ErrNotFound.
func (a *Admin) Workflow(ctx context.Context, id WorkflowID) (WorkflowDetail, error) {
	info, err := a.WorkflowStatus(ctx, id)
	if err != nil {
		return WorkflowDetail{}, err
	}
	ws, _ := workflowsOf(a.store)
	ms, err := ws.WorkflowMembers(ctx, id)
	if err != nil {
		return WorkflowDetail{}, actionErr(fmt.Sprintf("members of workflow %d", id), err)
	}
	d := WorkflowDetail{WorkflowInfo: info, Members: make([]WorkflowMember, len(ms))}
	for i, m := range ms {
		d.Members[i] = workflowMemberOf(m)
	}
	return d, nil
}

// CancelWorkflow cancels every live member of a Workflow as one audited
// Operator Action: waiting members become Cancelled at once (cause
// operator), Running ones are asked to stop cooperatively and end Cancelled
// however their Attempt ends. Terminal members keep their state. It
// returns the Workflow as the action left it. An unknown id is an error
// wrapping ErrNotFound.
func (a *Admin) CancelWorkflow(ctx context.Context, id WorkflowID) (WorkflowInfo, error) {
	ws, err := workflowsOf(a.store)
	if err != nil {
		return WorkflowInfo{}, fmt.Errorf("backwave: cancel workflow %d: %w", id, err)
	}
	w, err := ws.WorkflowCancel(ctx, store.WorkflowActionParams{ID: id, Actor: store.Actor(a.actor)})
	if err != nil {
		return WorkflowInfo{}, actionErr(fmt.Sprintf("cancel workflow %d", id), err)
	}
	return workflowInfoOf(w), nil
}

// RestartWorkflow is Workflow Restart, an audited Operator Action: it
// creates a new Workflow from the original's definition — each member's
// Wire Name, payload, Queue, attempt budget, Tags, Dependency edges and
// mode — with fresh job ids, all due now, linked to the original by
// RestartOf, and returns the NEW Workflow. It re-runs the whole graph from
// the start, Succeeded members included; the original is left as it is.
// An unknown id is an error wrapping ErrNotFound.
func (a *Admin) RestartWorkflow(ctx context.Context, id WorkflowID) (WorkflowInfo, error) {
	what := fmt.Sprintf("restart workflow %d", id)
	ws, err := workflowsOf(a.store)
	if err != nil {
		return WorkflowInfo{}, fmt.Errorf("backwave: %s: %w", what, err)
	}
	orig, err := ws.WorkflowGet(ctx, id)
	if err != nil {
		return WorkflowInfo{}, actionErr(what, err)
	}
	ms, err := ws.WorkflowMembers(ctx, id)
	if err != nil {
		return WorkflowInfo{}, actionErr(what, err)
	}
	jobs, err := restartDefinition(ms)
	if err != nil {
		return WorkflowInfo{}, fmt.Errorf("backwave: %s: %w", what, err)
	}
	res, err := ws.WorkflowInsert(ctx, store.WorkflowInsertParams{Name: orig.Name, RestartOf: id,
		Actor: store.Actor(a.actor), InsertManyParams: store.InsertManyParams{Jobs: jobs}})
	if err != nil {
		return WorkflowInfo{}, actionErr(what, err)
	}
	w, err := ws.WorkflowGet(ctx, res.Workflow)
	if err != nil {
		return WorkflowInfo{}, actionErr(fmt.Sprintf("%s: read the new workflow %d", what, res.Workflow), err)
	}
	return workflowInfoOf(w), nil
}

// restartDefinition turns a Workflow's members (ascending id, as
// WorkflowMembers returns them) into the jobs of its Workflow Restart:
// each member's Wire Name, payload, Queue, attempt budget, Tags,
// Concurrency Key and mode, its parents named by batch index, due at once.
func restartDefinition(ms []store.WorkflowMember) ([]store.NewJob, error) {
	index := make(map[job.ID]int, len(ms))
	for i, m := range ms {
		index[m.Job.ID] = i
	}
	jobs := make([]store.NewJob, len(ms))
	for i, m := range ms {
		nj := store.NewJob{WireName: m.Job.WireName, Queue: m.Job.Queue, Payload: m.Job.Payload,
			MaxAttempts: m.Job.MaxAttempts, Tags: m.Job.Tags, ConcurrencyKey: m.Job.ConcurrencyKey}
		if nj.MaxAttempts < 1 {
			nj.MaxAttempts = 1
		}
		if len(m.Parents) > 0 {
			nj.Dependency.Mode = m.Mode
			for _, p := range m.Parents {
				pi, ok := index[p]
				if !ok {
					return nil, fmt.Errorf("member %d names parent %d, which is not a member", m.Job.ID, p)
				}
				nj.Dependency.Parents = append(nj.Dependency.Parents, store.InBatch(pi))
			}
		}
		jobs[i] = nj
	}
	return jobs, nil
}

// RetryWorkflow is Workflow Retry, an audited Operator Action: it
// reanimates in place, under the same ids, the terminal members scope
// names — RetryAll, RetryFailed or RetryFailedAndDownstream — and returns
// the Workflow as the retry left it. Each reanimated member gets a fresh
// budget of MaxAttempts tries above the Attempt it had reached (as a
// requeue does), loses its Retry Cause, cancel cause and Job Output, and is
// Scheduled due now — or Awaiting Parent while a parent of it is live
// again, so no retried dependent runs before its retried parent has ended.
// Live members are untouched. A late outcome from an Attempt before the
// retry is stale and changes nothing. An unknown id is an error wrapping
// ErrNotFound; an invalid scope wraps ErrInvalidParams.
func (a *Admin) RetryWorkflow(ctx context.Context, id WorkflowID, scope WorkflowRetryScope) (WorkflowInfo, error) {
	what := fmt.Sprintf("retry workflow %d (%s)", id, scope)
	ws, err := workflowsOf(a.store)
	if err != nil {
		return WorkflowInfo{}, fmt.Errorf("backwave: %s: %w", what, err)
	}
	res, err := ws.WorkflowRetry(ctx, store.WorkflowRetryParams{ID: id, Scope: job.WorkflowRetryScope(scope), Actor: store.Actor(a.actor)})
	if err != nil {
		return WorkflowInfo{}, actionErr(what, err)
	}
	return workflowInfoOf(res.Workflow), nil
}
