// Package dashboardext is the Workflows page of the BackWave dashboard: a
// Dashboard Extension listing Workflows with their status and members by
// state, showing one Workflow's graph — members by state, Dependency edges,
// the failed path highlighted — as server-rendered SVG, and offering the
// three Workflow Operator Actions (cancel, Workflow Restart, Workflow
// Retry with its scope) behind the Permissions that gate them
// (permission.ActionCancelWorkflow, ActionRestartWorkflow,
// ActionRetryWorkflow).
//
//	h, err := dashboard.New(st, dashboard.Options{
//		Policy:     policy,
//		Extensions: []dashboard.Extension{dashboardext.New()},
//	})
//
// The dashboard keeps the View gate, the Permission and cross-origin checks
// on every action, and the audit trail.
package dashboardext

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/dashboard"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/workflow"
)

// Name is the extension's name: its pages live below /x/workflows/.
const Name = "workflows"

// pageSize is how many Workflows the list shows at once.
const pageSize = 50

// New returns the Workflows extension.
func New() dashboard.Extension {
	return dashboard.Extension{
		Name: Name,
		Nav:  []dashboard.NavEntry{{Label: "Workflows", Page: ""}},
		Pages: []dashboard.ExtensionPage{
			{Path: "", Title: "Workflows", Template: listTemplate, Load: loadList},
			{Path: "w/{id}", Title: "Workflow", Template: detailTemplate(), Load: loadDetail},
		},
		Actions: []dashboard.ExtensionAction{
			{Path: "w/{id}/cancel", Permission: permission.ActionCancelWorkflow.Permission(), Handle: cancel},
			{Path: "w/{id}/restart", Permission: permission.ActionRestartWorkflow.Permission(), Handle: restart},
			{Path: "w/{id}/retry", Permission: permission.ActionRetryWorkflow.Permission(), Handle: retry},
		},
	}
}

// invalid is a bad request: it wraps ErrInvalidParams, which the dashboard
// answers 400.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", backwave.ErrInvalidParams, fmt.Sprintf(format, args...))
}

func idOf(raw string) (backwave.WorkflowID, error) {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 {
		return 0, invalid("%q is not a workflow id (a positive integer)", raw)
	}
	return backwave.WorkflowID(n), nil
}

// listData is what the list page shows.
type listData struct {
	Items  []listItem
	Status string
	Name   string
	Next   backwave.Cursor
	// Statuses are the filter's choices.
	Statuses []string
}

type listItem struct {
	backwave.WorkflowInfo
	ByState []stateCount
}

func loadList(ctx context.Context, req dashboard.PageRequest) (any, error) {
	q := req.Query
	p := backwave.WorkflowListParams{Name: strings.TrimSpace(q.Get("name")), PageParams: backwave.PageParams{Limit: pageSize}}
	d := listData{Name: p.Name, Status: q.Get("status"), Statuses: []string{"running", "succeeded", "failed", "cancelled"}}
	if d.Status != "" {
		st, err := backwave.ParseWorkflowStatus(d.Status)
		if err != nil {
			return nil, err
		}
		p.Status = st
	}
	if raw := q.Get("before"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 1 {
			return nil, invalid("before %q is not a cursor", raw)
		}
		p.Before = backwave.Cursor(n)
	}
	page, err := req.Admin.Workflows(ctx, p)
	if err != nil {
		return nil, err
	}
	for _, w := range page.Items {
		it := listItem{WorkflowInfo: w}
		for _, s := range backwave.JobStates() {
			if n := w.Counts[s]; n > 0 {
				it.ByState = append(it.ByState, stateCount{State: s, Count: n})
			}
		}
		d.Items = append(d.Items, it)
	}
	d.Next = page.Next
	return d, nil
}

// detailData is what a Workflow's page shows.
type detailData struct {
	backwave.WorkflowInfo
	Graph      graphView
	Rows       []memberRow
	ByState    []stateCount
	FailedPath int
	Scopes     []string
}

func loadDetail(ctx context.Context, req dashboard.PageRequest) (any, error) {
	id, err := idOf(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	d, err := req.Admin.Workflow(ctx, id)
	if err != nil {
		return nil, err
	}
	path := workflow.FailedPath(d)
	rows, by := rowsOf(d, path, req.ViewSensitiveData)
	return detailData{
		WorkflowInfo: d.WorkflowInfo, Graph: layout(d, path, req.ViewSensitiveData), Rows: rows, ByState: by,
		FailedPath: len(path), Scopes: []string{backwave.RetryFailedAndDownstream.String(), backwave.RetryFailed.String(), backwave.RetryAll.String()},
	}, nil
}

func detailPath(id backwave.WorkflowID) string { return "w/" + id.String() }

func cancel(ctx context.Context, req dashboard.ActionRequest) (string, error) {
	id, err := idOf(req.PathValue("id"))
	if err != nil {
		return "", err
	}
	if _, err := req.Admin.CancelWorkflow(ctx, id); err != nil {
		return "", err
	}
	return detailPath(id), nil
}

func restart(ctx context.Context, req dashboard.ActionRequest) (string, error) {
	id, err := idOf(req.PathValue("id"))
	if err != nil {
		return "", err
	}
	w, err := req.Admin.RestartWorkflow(ctx, id)
	if err != nil {
		return "", err
	}
	return detailPath(w.ID), nil
}

func retry(ctx context.Context, req dashboard.ActionRequest) (string, error) {
	id, err := idOf(req.PathValue("id"))
	if err != nil {
		return "", err
	}
	raw := req.Form.Get("scope")
	if raw == "" {
		return "", invalid("a retry needs a scope: all, failed or failed+downstream")
	}
	scope, err := backwave.ParseWorkflowRetryScope(raw)
	if err != nil {
		return "", err
	}
	if _, err := req.Admin.RetryWorkflow(ctx, id, scope); err != nil {
		return "", err
	}
	return detailPath(id), nil
}
