package mcp

import (
	"context"
	"reflect"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/workflow"
	"github.com/google/jsonschema-go/jsonschema"
)

// The Workflow tools: the two Workflow reads of Admin and its three
// Workflow Operator Actions.

// workflowID is a Workflow's id in tool input and output.
type workflowID int64

// workflowStatusName is a Workflow status by name.
type workflowStatusName string

// retryScopeName is a Workflow Retry scope by name.
type retryScopeName string

// workflowTypeSchemas are the schemas of the Workflow tools' own types.
func workflowTypeSchemas() map[reflect.Type]*jsonschema.Schema {
	statuses := []any{}
	for _, s := range []backwave.WorkflowStatus{backwave.WorkflowRunning, backwave.WorkflowSucceeded, backwave.WorkflowFailed, backwave.WorkflowCancelled} {
		statuses = append(statuses, s.String())
	}
	scopes := []any{}
	for _, s := range []backwave.WorkflowRetryScope{backwave.RetryAll, backwave.RetryFailed, backwave.RetryFailedAndDownstream} {
		scopes = append(scopes, s.String())
	}
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[workflowID]():         {Type: "integer", Minimum: new(1.0)},
		reflect.TypeFor[workflowStatusName](): {Type: "string", Enum: statuses},
		reflect.TypeFor[retryScopeName]():     {Type: "string", Enum: scopes},
	}
}

// fieldStep is a member's Step name: the builder bakes it into the payload.
const fieldStep = "step"

type workflowRef struct {
	ID workflowID `json:"id" jsonschema:"the Workflow's id, as workflow_list shows it"`
}

type workflowListInput struct {
	Status workflowStatusName `json:"status,omitempty" jsonschema:"keep Workflows of this derived status; every status if absent"`
	Name   string             `json:"name,omitempty" jsonschema:"keep Workflows of exactly this name"`
	pageInput
}

type workflowRetryInput struct {
	ID    workflowID     `json:"id" jsonschema:"the Workflow's id, as workflow_list shows it"`
	Scope retryScopeName `json:"scope" jsonschema:"which terminal members to reanimate: all; failed (Dead-Lettered, Quarantined, operator-cancelled); failed+downstream (those and every terminal member below one: resume from failure)"`
}

type workflowView struct {
	ID        workflowID     `json:"id"`
	Name      string         `json:"name"`
	Status    string         `json:"status" jsonschema:"derived from the members' states: running, succeeded, failed or cancelled"`
	CreatedAt time.Time      `json:"created_at"`
	Members   int            `json:"members" jsonschema:"the member count"`
	Counts    map[string]int `json:"counts" jsonschema:"the members by state"`
	RestartOf workflowID     `json:"restart_of,omitempty" jsonschema:"the Workflow this one is the Workflow Restart of; absent if none"`
}

func workflowViewOf(w backwave.WorkflowInfo) workflowView {
	v := workflowView{ID: workflowID(w.ID), Name: w.Name, Status: w.Status.String(), CreatedAt: w.CreatedAt,
		Members: w.Members, Counts: make(map[string]int, len(w.Counts)), RestartOf: workflowID(w.RestartOf)}
	for s, n := range w.Counts {
		v.Counts[s.String()] = n
	}
	return v
}

type workflowPage struct {
	Workflows []workflowView `json:"workflows" jsonschema:"the Workflows, newest first"`
	Next      cursor         `json:"next,omitempty" jsonschema:"pass as before to read the next page; absent on the last page"`
}

type memberView struct {
	ID          jobID     `json:"id"`
	WireName    string    `json:"wire_name"`
	Step        string    `json:"step,omitempty" jsonschema:"the Step's name in the graph (wire#name); only for a caller holding ViewSensitiveData, as it rides in the payload"`
	State       stateName `json:"state"`
	CancelCause string    `json:"cancel_cause,omitempty"`
	Parents     []jobID   `json:"parents,omitempty" jsonschema:"the member's Dependency parents, all members of the Workflow"`
	Mode        string    `json:"mode,omitempty" jsonschema:"on_success or on_any_terminal; absent without parents"`
	FailedPath  bool      `json:"failed_path,omitempty" jsonschema:"on the failed path: Dead-Lettered or Quarantined, or Cancelled by such a failure upstream"`
}

type workflowGetResult struct {
	Workflow   workflowView `json:"workflow"`
	Members    []memberView `json:"members" jsonschema:"every member, in id order: the graph"`
	FailedPath []jobID      `json:"failed_path,omitempty" jsonschema:"the members on the failed path, in id order"`
	Withheld   []string     `json:"withheld,omitempty" jsonschema:"the sensitive fields left out of this result because the caller does not hold the ViewSensitiveData permission; absent when nothing was withheld"`
}

type workflowActionResult struct {
	Workflow workflowView `json:"workflow" jsonschema:"the Workflow as the action left it; for workflow_restart, the NEW Workflow"`
	Action   string       `json:"action" jsonschema:"the Operator Action taken"`
	Actor    string       `json:"actor" jsonschema:"the Actor the audit trail recorded for this action"`
}

func addWorkflowReads(b *builder) {
	addRead(b, "workflow_list", "List Workflows",
		"Workflows, newest first, one page at a time, each with its derived status and members by state; filter by status and exact name.",
		func(ctx context.Context, r reading, in workflowListInput) (workflowPage, error) {
			p := backwave.WorkflowListParams{Name: in.Name, PageParams: in.params()}
			if in.Status != "" {
				st, err := backwave.ParseWorkflowStatus(string(in.Status))
				if err != nil {
					return workflowPage{}, err
				}
				p.Status = st
			}
			page, err := r.admin.Workflows(ctx, p)
			if err != nil {
				return workflowPage{}, err
			}
			out := workflowPage{Workflows: make([]workflowView, len(page.Items)), Next: cursor(page.Next)}
			for i, w := range page.Items {
				out.Workflows[i] = workflowViewOf(w)
			}
			return out, nil
		})
	addRead(b, "workflow_get", "Get a Workflow",
		"One Workflow with every member, its state and Dependency parents (the graph), and the failed path: what failed and what its failure cancelled downstream. Step names need the ViewSensitiveData permission.",
		func(ctx context.Context, r reading, in workflowRef) (workflowGetResult, error) {
			d, err := r.admin.Workflow(ctx, backwave.WorkflowID(in.ID))
			if err != nil {
				return workflowGetResult{}, err
			}
			path := workflow.FailedPath(d)
			out := workflowGetResult{Workflow: workflowViewOf(d.WorkflowInfo), Members: make([]memberView, len(d.Members)), Withheld: withheld(r.sensitive, fieldStep)}
			for i, m := range d.Members {
				v := memberView{ID: jobID(m.Job.ID), WireName: m.Job.WireName, State: stateName(m.Job.State.String()),
					CancelCause: m.Job.CancelCause.String(), FailedPath: path[m.Job.ID]}
				if r.sensitive {
					v.Step = workflow.Label(m.Job)
				}
				for _, p := range m.Parents {
					v.Parents = append(v.Parents, jobID(p))
				}
				if len(m.Parents) > 0 {
					v.Mode = m.Mode.String()
				}
				if v.FailedPath {
					out.FailedPath = append(out.FailedPath, v.ID)
				}
				out.Members[i] = v
			}
			return out, nil
		})
}

func addWorkflowWrites(b *builder) {
	result := func(a acting, action permission.Action, w backwave.WorkflowInfo) workflowActionResult {
		return workflowActionResult{Workflow: workflowViewOf(w), Action: action.String(), Actor: string(a.actor)}
	}
	addWrite(b, "workflow_cancel", "Cancel a Workflow",
		"Cancels every live member of a Workflow: waiting members at once, running ones cooperatively; terminal members keep their state. Audited; needs the Cancel permission.",
		permission.ActionCancelWorkflow, writeHints{destructive: true, idempotent: true},
		func(ctx context.Context, a acting, in workflowRef) (workflowActionResult, error) {
			w, err := a.admin.CancelWorkflow(ctx, backwave.WorkflowID(in.ID))
			if err != nil {
				return workflowActionResult{}, err
			}
			return result(a, permission.ActionCancelWorkflow, w), nil
		})
	addWrite(b, "workflow_restart", "Restart a Workflow",
		"Workflow Restart: creates a NEW Workflow from this one's definition (each member's Wire Name, payload, Queue and edges) with fresh job ids, linked by restart_of, and runs the whole graph again from the start, Succeeded members included. The original is left as it is. Audited; needs the Requeue permission.",
		permission.ActionRestartWorkflow, writeHints{},
		func(ctx context.Context, a acting, in workflowRef) (workflowActionResult, error) {
			w, err := a.admin.RestartWorkflow(ctx, backwave.WorkflowID(in.ID))
			if err != nil {
				return workflowActionResult{}, err
			}
			return result(a, permission.ActionRestartWorkflow, w), nil
		})
	addWrite(b, "workflow_retry", "Retry a Workflow",
		"Workflow Retry: reanimates the Workflow's terminal members of the scope in place, under the same ids; each runs its whole handler again. Live members are untouched. Audited; needs the Requeue permission.",
		permission.ActionRetryWorkflow, writeHints{},
		func(ctx context.Context, a acting, in workflowRetryInput) (workflowActionResult, error) {
			scope, err := backwave.ParseWorkflowRetryScope(string(in.Scope))
			if err != nil {
				return workflowActionResult{}, err
			}
			w, err := a.admin.RetryWorkflow(ctx, backwave.WorkflowID(in.ID), scope)
			if err != nil {
				return workflowActionResult{}, err
			}
			return result(a, permission.ActionRetryWorkflow, w), nil
		})
}
