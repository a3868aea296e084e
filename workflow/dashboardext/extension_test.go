package dashboardext_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// The list shows each Workflow with its derived status and members by
// state, and filters by status and name.
func TestListPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	run := f.failedWorkflow()
	ts := f.serve(allowOnly(permission.View))
	status, body := get(t, ts, "/backwave/x/workflows/")
	if status != http.StatusOK {
		t.Fatalf("list: %d\n%s", status, body)
	}
	for _, want := range []string{
		fmt.Sprintf(`href="/backwave/x/workflows/w/%d"`, run.ID), `<span class="wf-status">failed</span>`, "<td>order</td>", "<td>5</td>",
		">Workflows<", // the nav entry
	} {
		if !strings.Contains(body, want) {
			t.Errorf("list lacks %q", want)
		}
	}
	if _, body := get(t, ts, "/backwave/x/workflows/?status=succeeded"); !strings.Contains(body, `id="no-workflows"`) {
		t.Error("status=succeeded lists the failed Workflow")
	}
	if _, body := get(t, ts, "/backwave/x/workflows/?name=other"); !strings.Contains(body, `id="no-workflows"`) {
		t.Error("name=other lists the Workflow named order")
	}
	if status, _ := get(t, ts, "/backwave/x/workflows/?status=bogus"); status != http.StatusBadRequest {
		t.Errorf("a bad status answers %d, want 400", status)
	}
}

// A Workflow's page draws every member and edge, outlines the failed path
// (the failed member and what it cancelled) and only it, and lists members
// by state.
func TestDetailPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	run := f.failedWorkflow()
	ts := f.serve(allowOnly(permission.View, permission.ViewSensitiveData))
	status, body := get(t, ts, fmt.Sprintf("/backwave/x/workflows/w/%d", run.ID))
	if status != http.StatusOK {
		t.Fatalf("detail: %d\n%s", status, body)
	}
	boxes := regexp.MustCompile(`<a href="/backwave/jobs/(\d+)" class="member" data-job="\d+" data-state="(\w+)"( data-failed-path="true")?>`).FindAllStringSubmatch(body, -1)
	if len(boxes) != 5 {
		t.Fatalf("%d members drawn, want 5\n%s", len(boxes), body)
	}
	wantState := []string{"succeeded", "dead_lettered", "succeeded", "cancelled", "cancelled"}
	wantPath := []bool{false, true, false, true, true}
	for i, n := range boxes {
		if n[1] != run.Jobs[i].String() || n[2] != wantState[i] || (n[3] != "") != wantPath[i] {
			t.Errorf("member %d: job %s %s failed-path=%v; want job %d %s %v", i, n[1], n[2], n[3] != "", run.Jobs[i], wantState[i], wantPath[i])
		}
	}
	if got := strings.Count(body, `<path class="edge"`); got != 3 {
		t.Errorf("%d ordinary edges, want 3 (root→charge, root→pack, pack→ship)", got)
	}
	if got := strings.Count(body, `<path class="edge failed-path"`); got != 2 {
		t.Errorf("%d failed-path edges, want 2 (charge→ship, ship→notify)", got)
	}
	for _, want := range []string{"test.fail#charge", `id="wf-failed-note"`, "3 members", `id="wf-status">failed<`,
		fmt.Sprintf(`<a href="/backwave/jobs/%d">%d</a>`, run.Jobs[1], run.Jobs[1])} {
		if !strings.Contains(body, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
	if status, _ := get(t, ts, "/backwave/x/workflows/w/999"); status != http.StatusNotFound {
		t.Errorf("an unknown Workflow answers %d, want 404", status)
	}
	if status, _ := get(t, ts, "/backwave/x/workflows/w/x1"); status != http.StatusBadRequest {
		t.Errorf("a bad id answers %d, want 400", status)
	}
}

// Each action is refused without the Permission its Action names — nothing
// changes, nothing is audited — and its control is hidden; with it, the
// action runs as the request's Actor and returns to the Workflow's page.
func TestActionsBehindTheirPermissions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	run := f.failedWorkflow()
	base := fmt.Sprintf("/backwave/x/workflows/w/%d", run.ID)
	viewer := f.serve(allowOnly(permission.View))
	_, body := get(t, viewer, base)
	for _, id := range []string{"wf-cancel", "wf-restart", "wf-retry"} {
		if strings.Contains(body, `id="`+id+`"`) {
			t.Errorf("a viewer sees the %s control", id)
		}
	}
	for _, a := range []string{"cancel", "restart", "retry"} {
		if resp := post(t, viewer, base+"/"+a, url.Values{"scope": {"failed"}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s without its Permission: %d, want 403", a, resp.StatusCode)
		}
	}
	// Cancel alone does not let a caller restart or retry.
	canceller := f.serve(allowOnly(permission.View, permission.Cancel))
	if _, body := get(t, canceller, base); !strings.Contains(body, `id="wf-cancel"`) || strings.Contains(body, `id="wf-retry"`) {
		t.Error("with Cancel only, the page should offer cancel and not retry")
	}
	for _, a := range []string{"restart", "retry"} {
		if resp := post(t, canceller, base+"/"+a, url.Values{"scope": {"failed"}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s with Cancel only: %d, want 403", a, resp.StatusCode)
		}
	}
	audit, err := f.admin.Audit(ctx, backwave.AuditListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(audit.Items) != 0 {
		t.Fatalf("refused actions were audited: %+v", audit.Items)
	}
	page, err := f.admin.Workflows(ctx, backwave.WorkflowListParams{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("a refused restart created a Workflow: %d (%v)", len(page.Items), err)
	}

	operator := f.serve(allowOnly(permission.View, permission.Requeue, permission.Cancel))
	if resp := post(t, operator, base+"/retry", url.Values{"scope": {"bogus"}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad scope: %d, want 400", resp.StatusCode)
	}
	if resp := post(t, operator, base+"/retry", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no scope: %d, want 400", resp.StatusCode)
	}
	resp := post(t, operator, base+"/restart", nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("restart: %d", resp.StatusCode)
	}
	page, err = f.admin.Workflows(ctx, backwave.WorkflowListParams{})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("after a restart: %d Workflows (%v), want 2", len(page.Items), err)
	}
	restarted := page.Items[0]
	if restarted.RestartOf != run.ID || resp.Header.Get("Location") != fmt.Sprintf("/backwave/x/workflows/w/%d", restarted.ID) {
		t.Errorf("restart made %+v and went to %q", restarted, resp.Header.Get("Location"))
	}
	if resp := post(t, operator, base+"/retry", url.Values{"scope": {"failed+downstream"}}); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != base {
		t.Errorf("retry: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := post(t, operator, fmt.Sprintf("/backwave/x/workflows/w/%d/cancel", restarted.ID), nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("cancel: %d", resp.StatusCode)
	}
	audit, err = f.admin.Audit(ctx, backwave.AuditListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range audit.Items {
		got = append(got, string(e.Actor)+" "+e.Action.String())
	}
	want := []string{"test:alice workflow_cancel", "test:alice workflow_retry", "test:alice workflow_restart"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("audit trail %v, want %v", got, want)
	}
	if status, _ := get(t, operator, "/backwave/x/workflows/w/999/cancel"); status != http.StatusMethodNotAllowed && status != http.StatusNotFound {
		t.Errorf("GET of an action: %d", status)
	}
}

// Every action refuses a caller holding every Permission but the one its
// Action names — and changes nothing, audits nothing — and is not refused
// with that one alone, so the check is not vacuous.
func TestEveryActionIsGated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		path   string
		action permission.Action
	}{
		{"cancel", permission.ActionCancelWorkflow},
		{"restart", permission.ActionRestartWorkflow},
		{"retry", permission.ActionRetryWorkflow},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			run := f.failedWorkflow()
			path := fmt.Sprintf("/backwave/x/workflows/w/%d/%s", run.ID, tc.path)
			form := url.Values{"scope": {"failed"}}
			var others []permission.Permission
			for _, p := range permission.All() {
				if p != tc.action.Permission() {
					others = append(others, p)
				}
			}
			if resp := post(t, f.serve(allowOnly(others...)), path, form); resp.StatusCode != http.StatusForbidden {
				t.Errorf("without %s: %d, want 403", tc.action.Permission(), resp.StatusCode)
			}
			if audit, err := f.admin.Audit(ctx, backwave.AuditListParams{}); err != nil || len(audit.Items) != 0 {
				t.Fatalf("a refused %s was audited: %+v %v", tc.path, audit.Items, err)
			}
			if w, err := f.admin.WorkflowStatus(ctx, run.ID); err != nil || w.Status != backwave.WorkflowFailed {
				t.Fatalf("a refused %s changed the Workflow: %+v %v", tc.path, w, err)
			}
			if resp := post(t, f.serve(allowOnly(tc.action.Permission())), path, form); resp.StatusCode != http.StatusSeeOther {
				t.Errorf("with %s alone: %d, want 303", tc.action.Permission(), resp.StatusCode)
			}
		})
	}
}
