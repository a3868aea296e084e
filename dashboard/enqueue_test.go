package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// The enqueue form: behind the Enqueue permission, the job is stored as the
// form gave it and audited with the caller's Actor; bad input is a 400 that
// says what is wrong, with nothing stored; without the permission the page
// says how to get it and the POST is refused.
func TestEnqueueForm(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, ts := f.serve(Options{Policy: allowAll()})
	ctx := context.Background()

	if status, body := get(t, ts, "/backwave/enqueue"); status != http.StatusOK || !strings.Contains(body, `name="wire_name"`) {
		t.Fatalf("enqueue page: %d\n%s", status, body)
	}
	resp := post(t, ts, "/backwave/enqueue/job", url.Values{
		"wire_name": {"mail.resend"}, "queue": {"mail"}, "payload": {`{"to":"ada@example.com"}`},
		"at": {"2031-05-06T07:08"}, "max_attempts": {"3"},
	})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/backwave/jobs/") {
		t.Fatalf("enqueue: %d to %q", resp.StatusCode, loc)
	}
	jobs, err := f.admin.Jobs(ctx, backwave.JobListParams{JobFilter: backwave.JobFilter{WireName: "mail.resend"}})
	if err != nil || len(jobs.Items) != 1 {
		t.Fatalf("jobs of mail.resend: %+v, %v; want the one enqueued", jobs.Items, err)
	}
	j := jobs.Items[0]
	if "/backwave/jobs/"+j.ID.String() != loc || j.Queue != "mail" || j.Ceiling != 3 || j.ScheduledAt.UTC().Format("2006-01-02T15:04") != "2031-05-06T07:08" {
		t.Fatalf("enqueued %+v (page %q), want mail, budget 3, due 2031-05-06T07:08", j, loc)
	}
	au, err := f.admin.Audit(ctx, backwave.AuditListParams{JobID: j.ID})
	if err != nil || len(au.Items) != 1 || au.Items[0].Action != backwave.AuditEnqueue || au.Items[0].Actor != "test:alice" {
		t.Fatalf("audit of the enqueue: %+v, %v; want one enqueue by test:alice", au.Items, err)
	}

	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"payload": {`{}`}}, "empty wire name"},
		{url.Values{"wire_name": {"w"}, "payload": {`[1]`}}, "not a JSON object"},
		{url.Values{"wire_name": {"w"}, "max_attempts": {"0"}}, "max_attempts"},
		{url.Values{"wire_name": {"w"}, "at": {"tomorrow"}}, "at"},
	} {
		resp, body := postRead(t, ts, "/backwave/enqueue/job", tc.form)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("enqueue %v: status %d, want 400 saying %q", tc.form, resp.StatusCode, tc.want)
		}
	}
	if n, _ := f.admin.Jobs(ctx, backwave.JobListParams{JobFilter: backwave.JobFilter{WireName: "w"}}); len(n.Items) != 0 {
		t.Fatalf("refused enqueues stored %d jobs", len(n.Items))
	}

	_, viewer := f.serve(Options{Policy: allowOnly(permission.View)})
	if _, body := get(t, viewer, "/backwave/enqueue"); !strings.Contains(body, "needs the Enqueue permission") || strings.Contains(body, `name="wire_name"`) {
		t.Errorf("enqueue page without the permission shows the form or no reason:\n%s", body)
	}
	if resp := post(t, viewer, "/backwave/enqueue/job", url.Values{"wire_name": {"w"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("enqueue without the permission: status %d, want 403", resp.StatusCode)
	}
}
