package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// TestExtensionMounts: a Dashboard Extension's page renders in the
// dashboard's frame, with its nav entry and banner, its data and the
// caller's capabilities; its action runs as the request's Actor behind its
// Permission and returns to the extension's page (glossary: Dashboard
// Extension).
func TestExtensionMounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(t, f)
	_, ts := f.serve(Options{Policy: allowAll(), Extensions: []Extension{testExtension()}})
	status, body := get(t, ts, "/backwave/x/probe/")
	if status != http.StatusOK {
		t.Fatalf("extension page: %d\n%s", status, body)
	}
	for _, want := range []string{
		`<p id="probe">1 jobs dead-lettered</p>`, `href="/backwave/x/probe/"`, ">Probe<", "probe extension mounted",
		`action="/backwave/x/probe/pause-all"`, "<title>Probe · BackWave</title>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("extension page lacks %q", want)
		}
	}
	// The banner shows on the built-in pages too.
	if _, overview := get(t, ts, "/backwave/"); !strings.Contains(overview, "probe extension mounted") {
		t.Error("the extension's banner is not on the overview")
	}
	resp := post(t, ts, "/backwave/x/probe/pause-all", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/backwave/x/probe/" {
		t.Errorf("extension action: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	qs, err := f.admin.Queues(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if !q.Paused {
			t.Errorf("queue %s not paused by the extension's action", q.Name)
		}
	}
	au, err := f.admin.Audit(context.Background(), backwave.AuditListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(au.Items) == 0 || au.Items[0].Actor != "test:alice" || au.Items[0].Action != backwave.AuditQueuePause {
		t.Errorf("the extension's write is not audited as the request's Actor: %+v", au.Items[:min(1, len(au.Items))])
	}
	// Without PauseQueue the page hides the control.
	_, ro := f.serve(Options{Policy: allowOnly(permission.View), Extensions: []Extension{testExtension()}})
	if _, body := get(t, ro, "/backwave/x/probe/"); strings.Contains(body, "probe-pause") {
		t.Error("the extension page shows its control to a caller without PauseQueue")
	}
}

// TestExtensionLoadErrors: a Load error answers by its kind, and a server
// error shows no internals.
func TestExtensionLoadErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ext := Extension{Name: "broken", Pages: []ExtensionPage{
		{Path: "missing/{id}", Title: "Missing", Template: "x", Load: func(_ context.Context, r PageRequest) (any, error) {
			return nil, fmt.Errorf("workflow %s: %w", r.PathValue("id"), backwave.ErrNotFound)
		}},
		{Path: "fails", Title: "Fails", Template: "x", Load: func(context.Context, PageRequest) (any, error) {
			return nil, fmt.Errorf("secret connection string postgres://u:pw@db")
		}},
	}}
	_, ts := f.serve(Options{Policy: allowAll(), Extensions: []Extension{ext}})
	if status, body := get(t, ts, "/backwave/x/broken/missing/7"); status != http.StatusNotFound || !strings.Contains(body, "workflow 7") {
		t.Errorf("not found: %d %q", status, body)
	}
	status, body := get(t, ts, "/backwave/x/broken/fails")
	if status != http.StatusInternalServerError || strings.Contains(body, "pw@db") {
		t.Errorf("server error: %d, internals shown: %v", status, strings.Contains(body, "pw@db"))
	}
}

// TestExtensionRegistrationChecked: an extension the dashboard cannot
// mount safely is refused at New, with the reason.
func TestExtensionRegistrationChecked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	load := func(context.Context, PageRequest) (any, error) { return nil, nil }
	handle := func(context.Context, ActionRequest) (string, error) { return "", nil }
	tests := []struct {
		name string
		exts []Extension
		want string
	}{
		{"bad name", []Extension{{Name: "Work Flows"}}, "lower-case"},
		{"twice", []Extension{{Name: "a"}, {Name: "a"}}, "twice"},
		{"nav to nowhere", []Extension{{Name: "a", Nav: []NavEntry{{Label: "X", Page: "x"}}}}, "names no page"},
		{"page without load", []Extension{{Name: "a", Pages: []ExtensionPage{{Path: "p"}}}}, "no Load"},
		{"absolute path", []Extension{{Name: "a", Pages: []ExtensionPage{{Path: "/p", Load: load}}}}, "leading slash"},
		{"bad template", []Extension{{Name: "a", Pages: []ExtensionPage{{Path: "p", Load: load, Template: "{{.Data"}}}}, "template"},
		{"action gated by View", []Extension{{Name: "a", Actions: []ExtensionAction{{Path: "x", Permission: permission.View, Handle: handle}}}}, "not a write Permission"},
		{"action without handle", []Extension{{Name: "a", Actions: []ExtensionAction{{Path: "x", Permission: permission.Cancel}}}}, "no Handle"},
		{"action twice", []Extension{{Name: "a", Actions: []ExtensionAction{{Path: "x", Permission: permission.Cancel, Handle: handle}, {Path: "x", Permission: permission.Requeue, Handle: handle}}}}, "route POST"},
		{"conflicting wildcards", []Extension{{Name: "a", Pages: []ExtensionPage{{Path: "w/{id}", Load: load}, {Path: "w/{name}", Load: load}}}}, "conflicts"},
		{"route twice", []Extension{{Name: "a", Pages: []ExtensionPage{{Path: "p", Load: load}, {Path: "p", Load: load}}}}, "twice"},
	}
	for _, tt := range tests {
		_, err := newServer(f.st, Options{Extensions: tt.exts})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.want)
		}
	}
}
