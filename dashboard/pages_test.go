package dashboard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// seeded names the jobs seed makes, one per interesting state.
type seeded struct {
	succeeded, deadLettered, quarantined, waiting, parent, child backwave.JobID
}

// Markers of the raw content ViewSensitiveData gates: each appears only in
// a payload, a Failure Detail, a Job Output or a Cursor.
const (
	secretPayload = "payload-secret-7f3a"
	secretDetail  = "detail-secret-91c2"
	secretOutput  = "output-secret-44d0"
	secretCursor  = "cursor-secret-5be1"
)

func seed(t *testing.T, f *fixture) seeded {
	t.Helper()
	var s seeded
	s.succeeded = f.enqueue(okJob{Out: secretOutput, Secret: secretPayload}, backwave.WithTags(backwave.Label("urgent"), backwave.Keyed("tenant", "acme")))
	s.deadLettered = f.enqueue(failJob{Detail: secretDetail, Secret: secretPayload}, backwave.WithTags(backwave.Keyed("tenant", "acme")))
	s.quarantined = f.enqueue(anyJob{W: "test.unrouted", Data: secretPayload})
	latest := backwave.WithUnique("mail:globex", backwave.UniqueWhileLive().Replace())
	s.waiting = f.enqueue(anyJob{W: "test.mail", Data: "first"}, backwave.WithQueue("mail"), latest)
	if again := f.enqueue(anyJob{W: "test.mail", Data: secretPayload}, backwave.WithQueue("mail"), backwave.WithTags(backwave.Keyed("tenant", "globex")), latest); again != s.waiting {
		t.Fatalf("a Replace of the held key answered job %d, want the holder %d", again, s.waiting)
	}
	s.parent = f.enqueue(anyJob{W: "test.mail", Data: secretPayload}, backwave.WithQueue("mail"))
	s.child = f.enqueue(anyJob{W: "test.mail", Data: secretPayload}, backwave.WithQueue("mail"), backwave.WithParents(backwave.OnSuccess, s.parent))
	f.waitState(s.succeeded, backwave.StateSucceeded)
	f.waitState(s.deadLettered, backwave.StateDeadLettered)
	f.waitState(s.quarantined, backwave.StateQuarantined)
	err := f.client.RegisterSchedule(context.Background(), backwave.RecurringSchedule{
		Name: "nightly-report", Cron: "30 2 * * 1-5", Zone: "Europe/Paris",
		Args: anyJob{W: "test.report"}, Options: []backwave.EnqueueOption{backwave.WithQueue("mail")}, NoOverlap: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.admin.SetQueueRate(context.Background(), "mail", backwave.QueueRate{Limit: 50, Period: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := f.admin.SetQueueLimit(context.Background(), "mail", 3); err != nil {
		t.Fatal(err)
	}
	return s
}

func idPath(id backwave.JobID) string { return "/backwave/jobs/" + strconv.FormatInt(int64(id), 10) }

// TestPagesRender loads every page and checks what each must show
// (glossary: Tag Facet, Retry Cause, Transition Log, Dependency, Recurring
// Schedule, No-Overlap).
func TestPagesRender(t *testing.T) {
	t.Parallel()
	testPagesRender(t, newFixture(t))
}

// TestPagesRenderSQLite renders the same pages over the Embedded Adapter.
func TestPagesRenderSQLite(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "jobs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	testPagesRender(t, newFixtureOn(t, st, nil))
}

func testPagesRender(t *testing.T, f *fixture) {
	ids := seed(t, f)
	_, ts := f.serve(Options{Policy: allowAll()})

	tests := []struct {
		path string
		want []string
	}{
		{"/backwave/", []string{"dead-lettered", "quarantined", "Jobs by state", "mail", "Throughput, last hour", "At their Concurrency Limit"}},
		{"/backwave/jobs", []string{"test.unrouted", "tenant=acme", "Tag Facet", "Requeue selected", "/backwave/jobs/facet"}},
		{"/backwave/jobs/facet", []string{"tenant=acme</a> <span class=\"count\">2</span>", "urgent"}},
		{"/backwave/jobs/facet?queue=mail", []string{"tenant=globex</a> <span class=\"count\">1</span>"}},
		{"/backwave/jobs?tk=tenant&tv=acme", []string{idPath(ids.deadLettered), idPath(ids.succeeded)}},
		{"/backwave/jobs?state=dead_lettered", []string{idPath(ids.deadLettered)}},
		{"/backwave/jobs?tagq=urgent", []string{idPath(ids.succeeded)}},
		{idPath(ids.deadLettered), []string{"Failure Detail", secretDetail, "Requeue", "Transition Log", "dead-lettered"}},
		{idPath(ids.succeeded), []string{secretOutput, secretPayload, secretCursor, "Saved by Attempt 1", "urgent"}},
		{idPath(ids.parent), []string{idPath(ids.child)}},
		{idPath(ids.waiting), []string{"Rewrites", "unique_replace", "key &#34;mail:globex&#34;", "tenant=globex"}},
		{idPath(ids.child), []string{idPath(ids.parent), "when every parent succeeded", "awaiting parent"}},
		{"/backwave/queues", []string{"mail", "0 / 3", "Pause", "0 of 50 started per 1m0s", "no live node serves this Queue"}},
		{"/backwave/nodes", []string{`data-node="test.`, `data-live="true"`, "<td>" + backwave.Version + "</td>", "/backwave/jobs?queue=default", `data-unserved="mail"`}},
		{"/backwave/jobs?queue=mail", []string{`data-unserved="mail"`, "overdue"}},
		{"/backwave/schedules", []string{"nightly-report", "30 2 * * 1-5", "at 02:30 on Monday to Friday, Europe/Paris time", "UTC</time> (20", "No-Overlap: on", "Trigger now"}},
		{"/backwave/audit", []string{"queue_set_limit", "test:setup", "limit 3"}},
	}
	for _, tt := range tests {
		status, body := get(t, ts, tt.path)
		if status != http.StatusOK {
			t.Errorf("GET %s: status %d\n%s", tt.path, status, body)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: no %q in the page", tt.path, w)
			}
		}
	}
	// The filter keeps only matching jobs.
	_, body := get(t, ts, "/backwave/jobs?tk=tenant&tv=acme")
	if strings.Contains(body, idPath(ids.waiting)+`"`) {
		t.Errorf("tag filter tenant=acme lists job %d, tagged tenant=globex", ids.waiting)
	}
}

// TestBadInputIsRefused: a malformed filter answers 400 naming the field,
// never a list under some other filter.
func TestBadInputIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, ts := f.serve(Options{Policy: allowAll()})
	for _, path := range []string{
		"/backwave/jobs?state=exploded", "/backwave/jobs?tk=a", "/backwave/jobs?from=yesterday",
		"/backwave/jobs?before=-4", "/backwave/jobs?limit=0", "/backwave/jobs?tagq=nosuchtag",
		"/backwave/audit?job=x", "/backwave/tags/suggest?limit=9999",
	} {
		if status, _ := get(t, ts, path); status != http.StatusBadRequest {
			t.Errorf("GET %s: status %d, want 400", path, status)
		}
	}
	if status, _ := get(t, ts, "/backwave/jobs/999999"); status != http.StatusNotFound {
		t.Errorf("unknown job: status %d, want 404", status)
	}
}

// TestOperatorActions performs every built-in action through the
// dashboard and checks its effect and its audit record (glossary:
// Operator Action).
func TestOperatorActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	_, ts := f.serve(Options{Policy: allowAll()})
	ctx := context.Background()

	resp := post(t, ts, idPath(ids.deadLettered)+"/requeue", url.Values{"back": {idPath(ids.deadLettered)}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != idPath(ids.deadLettered) {
		t.Fatalf("requeue: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// It runs again and dead-letters again: the handler always fails.
	f.waitState(ids.deadLettered, backwave.StateDeadLettered)
	if j, _ := f.client.JobGet(ctx, ids.deadLettered); j.Attempt != 2 {
		t.Errorf("requeued job ran Attempt %d, want 2", j.Attempt)
	}

	// The one wording of a refused action, as the CLI and the MCP Server say it.
	want := fmt.Sprintf("requeue job %d: it is succeeded; only dead-lettered or quarantined jobs can be requeued", ids.succeeded)
	if resp, body := postRead(t, ts, idPath(ids.succeeded)+"/requeue", nil); resp.StatusCode != http.StatusConflict || !strings.Contains(body, want) {
		t.Errorf("requeue of a Succeeded job: status %d, want 409 saying %q; page:\n%s", resp.StatusCode, want, body)
	}
	if resp := post(t, ts, idPath(ids.waiting)+"/reschedule", url.Values{"at": {"2031-05-06T07:08"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("reschedule: status %d", resp.StatusCode)
	}
	if j, _ := f.client.JobGet(ctx, ids.waiting); j.ScheduledAt.UTC().Format("2006-01-02T15:04") != "2031-05-06T07:08" {
		t.Errorf("rescheduled due time %s", j.ScheduledAt)
	}
	resp = post(t, ts, "/backwave/jobs/bulk/cancel", url.Values{"id": {strconv.FormatInt(int64(ids.waiting), 10), strconv.FormatInt(int64(ids.succeeded), 10)}, "back": {"/backwave/jobs?queue=mail"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "ok=1") || !strings.Contains(loc, "failed=1") || !strings.Contains(loc, "queue=mail") {
		t.Errorf("bulk cancel: %d to %q", resp.StatusCode, loc)
	}
	f.waitState(ids.waiting, backwave.StateCancelled)

	if resp := post(t, ts, "/backwave/queues/pause", url.Values{"name": {"mail"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("pause queue: status %d", resp.StatusCode)
	}
	if resp := post(t, ts, "/backwave/queues/limit", url.Values{"name": {"mail"}, "limit": {"7"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("set limit: status %d", resp.StatusCode)
	}
	if resp := post(t, ts, "/backwave/queues/limit", url.Values{"name": {"mail"}, "limit": {"-1"}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("set limit -1: status %d, want 400", resp.StatusCode)
	}
	qs, _ := f.admin.Queues(ctx)
	for _, q := range qs {
		if q.Name == "mail" && (!q.Paused || q.Limit != 7) {
			t.Errorf("queue mail after the actions: %+v", q)
		}
	}
	resp = post(t, ts, "/backwave/schedules/trigger", url.Values{"name": {"nightly-report"}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/backwave/jobs/") {
		t.Errorf("trigger: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := post(t, ts, "/backwave/schedules/trigger", url.Values{"name": {"nightly-report"}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("second trigger under No-Overlap: status %d, want 409", resp.StatusCode)
	}
	for _, a := range []string{"pause", "resume"} {
		if resp := post(t, ts, "/backwave/schedules/"+a, url.Values{"name": {"nightly-report"}}); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s schedule: status %d", a, resp.StatusCode)
		}
	}
	if resp := post(t, ts, "/backwave/schedules/remove", url.Values{"name": {"nightly-report"}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("remove without confirmation: status %d, want 400", resp.StatusCode)
	}
	if resp := post(t, ts, "/backwave/queues/resume", url.Values{"name": {"mail"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("resume queue: status %d", resp.StatusCode)
	}

	au, err := f.admin.Audit(ctx, backwave.AuditListParams{PageParams: backwave.PageParams{Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range au.Items {
		if e.Actor == "test:alice" {
			got[e.Action.String()]++
		}
	}
	for _, want := range []string{"requeue", "reschedule", "cancel", "queue_pause", "queue_resume", "queue_set_limit", "schedule_trigger", "schedule_pause", "schedule_resume"} {
		if got[want] == 0 {
			t.Errorf("no %s by test:alice in the audit trail (have %v)", want, got)
		}
	}
}

// TestReadOnlyHidesControls: Policy.ReadOnly refuses every write and the
// pages show no control for one.
func TestReadOnlyHidesControls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	pol := allowAll()
	pol.ReadOnly = true
	_, ts := f.serve(Options{Policy: pol})
	for _, path := range []string{"/backwave/jobs", idPath(ids.deadLettered), "/backwave/queues", "/backwave/schedules"} {
		status, body := get(t, ts, path)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, status)
		}
		if strings.Contains(body, `method="post"`) && strings.Contains(body, "<button") && strings.Contains(body, "formaction") {
			t.Errorf("GET %s: read-only page shows a write control", path)
		}
		for _, b := range []string{">Requeue<", ">Pause<", ">Trigger now<", "Requeue selected"} {
			if strings.Contains(body, b) {
				t.Errorf("GET %s: read-only page shows %q", path, b)
			}
		}
	}
	if resp := post(t, ts, idPath(ids.deadLettered)+"/requeue", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("read-only requeue: status %d, want 403", resp.StatusCode)
	}
}

// TestWriteNeedsActor: without a ResolveActor, or when it names nobody,
// every write is refused even with its Permission.
func TestWriteNeedsActor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	for name, resolve := range map[string]func(context.Context) (string, error){
		"nil":   nil,
		"empty": func(context.Context) (string, error) { return "", nil },
	} {
		pol := permission.Policy{Allow: func(context.Context, permission.Permission) bool { return true }, ResolveActor: resolve}
		_, ts := f.serve(Options{Policy: pol})
		if resp := post(t, ts, idPath(ids.deadLettered)+"/requeue", nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s ResolveActor: requeue status %d, want 403", name, resp.StatusCode)
		}
	}
}

// TestServe serves a dashboard on a listener until its context ends, and
// mounts under another prefix.
func TestServe(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h, err := New(f.st, Options{Prefix: "/ops/jobs"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveListener(ctx, ln, h) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/ops/jobs/queues")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /ops/jobs/queues: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after its context ended: %v", err)
	}
	if _, err := New(f.st, Options{RefreshInterval: time.Millisecond}); err == nil {
		t.Error("a 1ms RefreshInterval was accepted")
	}
	for _, bad := range []string{"ops", "/ops/", "/o ps", "//x"} {
		if _, err := New(f.st, Options{Prefix: bad}); err == nil {
			t.Errorf("prefix %q accepted", bad)
		}
	}
}

// The job page of a snoozed job shows the snooze count and the snooze's
// Transition Log entry, its detail labelled as a snooze (docs/job-shapes.md,
// Snooze).
func TestJobPageShowsSnooze(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.enqueue(snoozeJob{})
	f.waitState(id, backwave.StateSucceeded)
	_, ts := f.serve(Options{Policy: allowAll()})
	status, body := get(t, ts, idPath(id))
	if status != http.StatusOK {
		t.Fatalf("GET job page: status %d\n%s", status, body)
	}
	for _, want := range []string{`<span id="job-snoozes">snoozed 1 time</span>`, `<span class="via">snooze</span>`,
		`<span class="label">Snooze</span>`, "waiting for the upstream"} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks %q:\n%s", want, body)
		}
	}
}

// The job page of a Dead-Lettered or Quarantined job says why it ended
// (its Terminal Cause, in JobInfo.EndedBecause's words); a succeeded job's
// page has no such row.
func TestJobPageShowsTerminalCause(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := seed(t, f)
	_, ts := f.serve(Options{Policy: allowAll()})
	for _, c := range []struct {
		id   backwave.JobID
		want string
	}{
		{s.deadLettered, `<dd id="job-ended-because">permanent failure: the handler failed Attempt 1 permanently</dd>`},
		{s.quarantined, `<dd id="job-ended-because">no handler for Wire Name &#34;test.unrouted&#34;</dd>`},
	} {
		status, body := get(t, ts, idPath(c.id))
		if status != http.StatusOK || !strings.Contains(body, c.want) {
			t.Errorf("job %d page (status %d) lacks %q:\n%s", c.id, status, c.want, body)
		}
	}
	if _, body := get(t, ts, idPath(s.succeeded)); strings.Contains(body, "job-ended-because") {
		t.Errorf("succeeded job's page says why it ended:\n%s", body)
	}
}

// TestNodesPage: the Nodes page lists every registered node, live or
// expired on the store's clock, and the Queues page and job list warn of a
// Queue with ready jobs no live node serves, marking its due jobs overdue —
// and only that Queue's.
func TestNodesPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// A node that beat once, a nanosecond beat ago times three: expired by
	// the time the page reads the registry. It serves "mail", which must
	// stay unserved.
	if _, err := f.st.NodeStamp(ctx, store.NodeStampParams{ID: "ghost.1", Host: "gone-host", PID: 7, Version: "0.0.9",
		Groups: []store.NodeGroup{{Name: "mailers", Queues: []string{"mail"}}}, Running: 3, Beat: time.Nanosecond, Forget: time.Hour}); err != nil {
		t.Fatal(err)
	}
	mail := f.enqueue(anyJob{W: "test.mail"}, backwave.WithQueue("mail"))
	served := f.enqueue(anyJob{W: "test.later"}, backwave.WithDelay(time.Hour))
	_, ts := f.serve(Options{Policy: allowAll()})

	_, body := get(t, ts, "/backwave/nodes")
	for _, w := range []string{`data-node="ghost.1" data-live="false"`, "gone-host", "0.0.9", "mailers", "expired", `data-live="true"`, backwave.Version, ` ago</span>`, `data-unserved="mail"`} {
		if !strings.Contains(body, w) {
			t.Errorf("GET /backwave/nodes: no %q in the page\n%s", w, body)
		}
	}
	if strings.Contains(body, `data-unserved="default"`) {
		t.Errorf("the Nodes page warns about Queue default, which the fixture's live node serves")
	}
	_, body = get(t, ts, "/backwave/jobs")
	if !strings.Contains(body, `data-unserved="mail"`) || strings.Contains(body, `data-unserved="default"`) {
		t.Errorf("the job list's warnings are wrong: want mail's only")
	}
	for _, tc := range []struct {
		id      backwave.JobID
		overdue bool
	}{{mail, true}, {served, false}} {
		row := jobRowHTML(t, body, tc.id)
		if got := strings.Contains(row, "overdue"); got != tc.overdue {
			t.Errorf("job %d's row marked overdue = %v, want %v:\n%s", tc.id, got, tc.overdue, row)
		}
	}
	// Once a live node serves mail, the warnings go.
	if _, err := f.st.NodeStamp(ctx, store.NodeStampParams{ID: "mailer.1", Groups: []store.NodeGroup{{Name: "m", Queues: []string{"mail"}}},
		Beat: time.Hour, Forget: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/backwave/nodes", "/backwave/jobs", "/backwave/queues"} {
		if _, body := get(t, ts, path); strings.Contains(body, "no live node serves this Queue") || strings.Contains(body, `class="flag overdue"`) {
			t.Errorf("GET %s still warns with a live node serving mail", path)
		}
	}
}

// jobRowHTML is the job list's table row of job id.
func jobRowHTML(t *testing.T, body string, id backwave.JobID) string {
	t.Helper()
	start := strings.Index(body, `<tr data-job="`+strconv.FormatInt(int64(id), 10)+`">`)
	if start < 0 {
		t.Fatalf("job %d is not in the list", id)
	}
	end := strings.Index(body[start:], "</tr>")
	return body[start : start+end]
}
