package mcp

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// callWorkflowTools runs the Workflow tools of TestCallEveryTool on a
// Workflow it adds to the fixture's store: sendMail → sendMail on a Queue
// nothing serves, due tomorrow, so its members wait.
func callWorkflowTools(t *testing.T, f *fixture, cs *sdk.ClientSession, do func(string) string, actor string) {
	t.Helper()
	ctx := context.Background()
	c, err := backwave.NewClient(f.store, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tomorrow := backwave.WithRunAt(time.Now().Add(24 * time.Hour))
	id, jobs, err := c.EnqueueWorkflow(ctx, backwave.NewWorkflow{Name: "signup"}, []backwave.EnqueueParams{
		{Args: sendMail{To: "a@example.com"}, Options: []backwave.EnqueueOption{backwave.WithQueue("flows"), tomorrow}},
		{Args: sendMail{To: "b@example.com"}, Options: []backwave.EnqueueOption{backwave.WithQueue("flows"), tomorrow, backwave.WithParentsInBatch(backwave.OnSuccess, 0)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	list := mustCall[workflowPage](t, cs, do("workflow_list"), map[string]any{"status": "running"})
	if len(list.Workflows) != 1 || list.Workflows[0].ID != workflowID(id) || list.Workflows[0].Members != 2 || list.Workflows[0].Counts["scheduled"] != 1 {
		t.Errorf("workflow_list: %+v", list.Workflows)
	}
	if none := mustCall[workflowPage](t, cs, "workflow_list", map[string]any{"name": "other"}); len(none.Workflows) != 0 {
		t.Errorf("workflow_list name=other: %+v", none.Workflows)
	}
	got := mustCall[workflowGetResult](t, cs, do("workflow_get"), map[string]any{"id": id})
	if len(got.Members) != 2 || got.Members[1].ID != jobID(jobs[1]) || !slices.Equal(got.Members[1].Parents, []jobID{jobID(jobs[0])}) ||
		got.Members[1].Mode != "on_success" || got.Members[0].Step != "mcptest.send_mail" || got.Withheld != nil {
		t.Errorf("workflow_get: %+v", got)
	}
	newest := func() backwave.AuditEntry {
		t.Helper()
		entries := f.audit(t)
		if len(entries) == 0 {
			t.Fatal("no audit entries")
		}
		return entries[0]
	}
	retried := mustCall[workflowActionResult](t, cs, do("workflow_retry"), map[string]any{"id": id, "scope": "failed"})
	if retried.Workflow.Status != "running" || retried.Actor != actor || newest().Action != backwave.AuditWorkflowRetry {
		t.Errorf("workflow_retry of a running Workflow: %+v", retried)
	}
	cancelled := mustCall[workflowActionResult](t, cs, do("workflow_cancel"), map[string]any{"id": id})
	if cancelled.Workflow.Status != "cancelled" || cancelled.Workflow.Counts["cancelled"] != 2 || newest().Action != backwave.AuditWorkflowCancel {
		t.Errorf("workflow_cancel: %+v", cancelled)
	}
	restarted := mustCall[workflowActionResult](t, cs, do("workflow_restart"), map[string]any{"id": id})
	if restarted.Workflow.ID == workflowID(id) || restarted.Workflow.RestartOf != workflowID(id) || restarted.Workflow.Members != 2 ||
		restarted.Workflow.Status != "running" || newest().Action != backwave.AuditWorkflowRestart {
		t.Errorf("workflow_restart: %+v", restarted)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"workflow_get", map[string]any{"id": 999}},
		{"workflow_cancel", map[string]any{"id": 999}},
		{"workflow_retry", map[string]any{"id": id, "scope": "some"}},
		{"workflow_list", map[string]any{"status": "broken"}},
	} {
		if r := call(t, cs, tc.tool, tc.args); !r.isError {
			t.Errorf("%s %v: not an error: %s", tc.tool, tc.args, r.structured)
		}
	}
}
