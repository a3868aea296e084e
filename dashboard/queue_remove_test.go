package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// removeForm is the Remove button's form of Queue name on the Queues page.
func removeForm(name string) string {
	return `action="/backwave/queues/remove"><input type="hidden" name="back" value="/backwave/queues"><input type="hidden" name="name" value="` + name + `">`
}

// TestRemoveQueue: the Queues page offers Remove on an empty Queue only,
// behind the PauseQueue Permission; removing one is audited under the
// signed-in operator, and a Queue holding jobs is refused with 409 and the
// wording the CLI and the MCP Server use.
func TestRemoveQueue(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	f.enqueue(anyJob{W: "test.mail"}, backwave.WithQueue("mail"))
	if err := f.admin.SetQueueLimit(ctx, "spare", 2); err != nil {
		t.Fatal(err)
	}
	_, ts := f.serve(Options{Policy: allowAll()})
	_, viewer := f.serve(Options{Policy: allowOnly(permission.View)})

	status, body := get(t, ts, "/backwave/queues")
	if status != http.StatusOK || !strings.Contains(body, removeForm("spare")) || strings.Contains(body, removeForm("mail")) {
		t.Fatalf("Queues page (%d): want Remove on spare only; page:\n%s", status, body)
	}
	if _, body := get(t, viewer, "/backwave/queues"); strings.Contains(body, "/queues/remove") {
		t.Error("the Queues page offers Remove without the PauseQueue Permission")
	}
	if resp := post(t, viewer, "/backwave/queues/remove", url.Values{"name": {"spare"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("remove without PauseQueue: status %d, want 403", resp.StatusCode)
	}

	want := `remove queue &#34;mail&#34;: it holds 1 job`
	if resp, body := postRead(t, ts, "/backwave/queues/remove", url.Values{"name": {"mail"}}); resp.StatusCode != http.StatusConflict || !strings.Contains(body, want) {
		t.Errorf("remove of a Queue holding a job: status %d, want 409 saying %q; page:\n%s", resp.StatusCode, want, body)
	}
	if resp := post(t, ts, "/backwave/queues/remove", url.Values{"name": {"spare"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove spare: status %d, want 303", resp.StatusCode)
	}
	if _, err := f.admin.Queue(ctx, "spare"); err == nil {
		t.Error("spare is still known after its removal")
	}
	if resp := post(t, ts, "/backwave/queues/remove", url.Values{"name": {"spare"}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("remove of a removed Queue: status %d, want 404", resp.StatusCode)
	}
	au, err := f.admin.Audit(ctx, backwave.AuditListParams{Queue: "spare"})
	if err != nil || len(au.Items) == 0 || au.Items[0].Action != backwave.AuditQueueRemove || au.Items[0].Actor != "test:alice" {
		t.Errorf("audit trail of spare = %+v, %v; want its removal by test:alice", au.Items, err)
	}
}

// TestJobFiltersRefuseUnknownNames: the job list and the Tag Facet page
// answer 404 for a Queue or Wire Name the store does not know, in the
// wording every surface shares, and a known Queue without jobs lists none.
func TestJobFiltersRefuseUnknownNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(anyJob{W: "test.mail"}, backwave.WithQueue("mail"))
	_, ts := f.serve(Options{Policy: allowAll()})
	for _, tc := range []struct {
		path, want string
		status     int
	}{
		{"/backwave/jobs?queue=mial", `no such Queue &#34;mial&#34; (known: mail)`, http.StatusNotFound},
		{"/backwave/jobs?wire=test.mial", `no such Wire Name &#34;test.mial&#34; (known: test.mail)`, http.StatusNotFound},
		{"/backwave/jobs/facet?queue=mial", `no such Queue &#34;mial&#34; (known: mail)`, http.StatusNotFound},
		{"/backwave/jobs?queue=mail&state=running", "", http.StatusOK},
	} {
		status, body := get(t, ts, tc.path)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d, want %d saying %q; page:\n%s", tc.path, status, tc.status, tc.want, body)
		}
	}
}
