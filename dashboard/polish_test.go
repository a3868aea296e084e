package dashboard

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// TestRootRedirectsToPrefix: a GET of the site's root, routed to the
// dashboard, leads to its Overview under the prefix, whatever the prefix.
func TestRootRedirectsToPrefix(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct{ prefix, want string }{
		{"", "/backwave/"},
		{"/ops/jobs", "/ops/jobs/"},
	} {
		_, ts := f.serve(Options{Policy: allowAll(), Prefix: tc.prefix})
		c := ts.Client()
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c.Get(ts.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != tc.want {
			t.Errorf("prefix %q: GET / answers %d to %q, want %d to %q", tc.prefix, resp.StatusCode, resp.Header.Get("Location"), http.StatusFound, tc.want)
		}
		// Only the root: another path outside the prefix is not the
		// dashboard's.
		if status, _ := get(t, ts, "/elsewhere"); status != http.StatusNotFound {
			t.Errorf("prefix %q: GET /elsewhere answers %d, want 404", tc.prefix, status)
		}
	}
}

// when matches an instant as the "when" partial renders it: the absolute
// time in UTC (a schedule's own zone's after it), and beside it how long
// ago it was or how far ahead.
var when = regexp.MustCompile(`<time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</time>(?: \([^)<]*\))? <span class="ago">(\d+[smhd] ago|in \d+[smhd]|[0-9hms.]+ ago)</span>`)

// TestTimesAreAbsoluteAndRelative: every page listing instants shows each
// in UTC with how long ago (or how far ahead) it is beside it.
func TestTimesAreAbsoluteAndRelative(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	_, ts := f.serve(Options{Policy: allowAll()})
	for _, tc := range []struct {
		page string
		// cell narrows the check to the part of the page holding the
		// instant (a row, a list item); empty for the whole page.
		cell *regexp.Regexp
	}{
		{"/backwave/jobs", regexp.MustCompile(`(?s)<td class="job-created">.*?</td>`)},
		{"/backwave/jobs", regexp.MustCompile(`(?s)<td class="job-when">.*?</td>`)},
		{idPath(ids.deadLettered), regexp.MustCompile(`(?s)<dt>Created</dt><dd>.*?</dd>`)},
		{idPath(ids.deadLettered), regexp.MustCompile(`(?s)<dt>Finished</dt><dd>.*?</dd>`)},
		{idPath(ids.deadLettered), regexp.MustCompile(`(?s)<ol class="timeline">.*?</li>`)},
		{"/backwave/queues", regexp.MustCompile(`(?s)<tbody class="queue" data-queue="mail">.*?<td class="queue-age">.*?</td>`)},
		{"/backwave/nodes", regexp.MustCompile(`(?s)<td class="node-started">.*?</td>`)},
		{"/backwave/nodes", regexp.MustCompile(`(?s)<td class="node-heartbeat">.*?</td>`)},
		{"/backwave/schedules", regexp.MustCompile(`(?s)<dt>Next occurrence</dt><dd>.*?</dd>`)},
		{"/backwave/audit", nil},
	} {
		status, body := get(t, ts, tc.page)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d", tc.page, status)
		}
		part := body
		if tc.cell != nil {
			if part = tc.cell.FindString(body); part == "" {
				t.Errorf("GET %s: nothing matches %s", tc.page, tc.cell)
				continue
			}
		}
		if tc.page == "/backwave/audit" && !strings.Contains(body, "<td>") {
			continue // no audit entry yet: nothing to check
		}
		if !when.MatchString(part) {
			t.Errorf("GET %s: no absolute time with a relative one beside it in %s", tc.page, part)
		}
	}
}

// TestAgo: how long ago, or how far ahead, an instant is, roughly.
func TestAgo(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Time{}, ""},
		{now.Add(-5 * time.Second), "5s ago"},
		{now.Add(-3 * time.Minute), "3m ago"},
		{now.Add(-30 * time.Hour), "30h ago"},
		{now.Add(-72 * time.Hour), "3d ago"},
		{now.Add(90*time.Minute + time.Second), "in 1h"},
	} {
		if got := ago(tc.at); got != tc.want {
			t.Errorf("ago(now%+v) = %q, want %q", tc.at.Sub(now).Round(time.Second), got, tc.want)
		}
	}
}

// TestThousands: counts as the dashboard prints them in prose.
func TestThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 100000: "100,000", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCapTooltipFromTheCap: a ready count that stopped at the count cap
// says the cap the read used, on the Overview and the Queues page.
func TestCapTooltipFromTheCap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s, _ := f.serve(Options{Policy: allowAll()})
	cell := backlogCell{Ready: 1234, Later: 5000, ReadyAtLeast: true, Cap: 1234}
	for _, tc := range []struct {
		template string
		data     any
	}{
		{"queues", queuesData{States: backwave.JobStates(), Columns: queueColumns + len(backwave.JobStates()), Queues: []queueRow{{Info: backwave.QueueInfo{Name: "big"}, Backlog: cell}}}},
		{"overview", overviewData{States: backwave.JobStates(), Queues: []queueCounts{{Info: backwave.QueueInfo{Name: "big"}, Backlog: cell}}}},
	} {
		var b bytes.Buffer
		if err := s.pages[tc.template].ExecuteTemplate(&b, "main", layout{Prefix: s.prefix, Data: tc.data}); err != nil {
			t.Fatalf("%s: %v", tc.template, err)
		}
		if !strings.Contains(b.String(), `title="at least: counts stop at 1,234 when`) || !strings.Contains(b.String(), "≥ 1234") {
			t.Errorf("%s: a capped ready count does not name the cap 1,234:\n%s", tc.template, b.String())
		}
	}
	// The cap is the one the Admin's read uses.
	f.enqueue(okJob{}, backwave.WithQueue("capped"), backwave.WithDelay(time.Hour))
	bl, err := s.backlog(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := bl["capped"].Cap; got != 100_000 {
		t.Errorf("backlog cap %d, want store.DefaultBacklogCountCap", got)
	}
}

// TestPlurals: one of a thing is one, not "1 jobs".
func TestPlurals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// One ready job on a Queue no node serves, and nothing else stored.
	f.enqueue(anyJob{W: "test.lonely"}, backwave.WithQueue("lonely"))
	_, ts := f.serve(Options{Policy: allowAll()})
	for _, tc := range []struct{ page, want, not string }{
		{"/backwave/", `<span class="n" data-count="total">1</span> job stored`, "1</span> jobs stored"},
		{"/backwave/nodes", `has 1 ready job and no live node serves this Queue: nothing runs it until`, "1 ready jobs"},
		{"/backwave/jobs", `has 1 ready job and no live node serves this Queue: nothing runs it until`, "1 ready jobs"},
	} {
		_, body := get(t, ts, tc.page)
		if !strings.Contains(body, tc.want) || strings.Contains(body, tc.not) {
			t.Errorf("GET %s: want %q, not %q, in:\n%s", tc.page, tc.want, tc.not, body)
		}
	}
	f.enqueue(anyJob{W: "test.lonely"}, backwave.WithQueue("lonely"))
	if _, body := get(t, ts, "/backwave/nodes"); !strings.Contains(body, "has 2 ready jobs and no live node serves this Queue: nothing runs them until") {
		t.Errorf("GET /backwave/nodes with 2 ready jobs:\n%s", body)
	}
}

// backlogCounter counts the store's Backlog reads.
type backlogCounter struct {
	backwave.Store
	reads atomic.Int64
}

func (c *backlogCounter) QueueBacklog(ctx context.Context, p store.BacklogParams) ([]store.QueueBacklog, error) {
	c.reads.Add(1)
	return c.Store.QueueBacklog(ctx, p)
}

// TestJobListReadsBacklogOnlyForUnserved: the job list and the Nodes page
// read the backlog (the job list's costliest read at scale) only when some Queue it shows has no live
// node, for the warning that Queue's ready jobs wait.
func TestJobListReadsBacklogOnlyForUnserved(t *testing.T) {
	t.Parallel()
	st := &backlogCounter{Store: memstore.New(memstore.Options{Clock: backwave.WallClock{}})}
	f := newFixtureOn(t, st, nil)
	f.enqueue(anyJob{W: "test.served"}, backwave.WithQueue(servedQueue), backwave.WithDelay(time.Hour))
	_, ts := f.serve(Options{Policy: allowAll()})
	for _, tc := range []struct {
		path  string
		reads int64
	}{
		{"/backwave/jobs?queue=" + servedQueue, 0}, // the fixture's node serves it
		{"/backwave/jobs", 0},                      // every Queue known is served
		{"/backwave/nodes", 0},
	} {
		before := st.reads.Load()
		if status, _ := get(t, ts, tc.path); status != http.StatusOK {
			t.Fatalf("GET %s: %d", tc.path, status)
		}
		if got := st.reads.Load() - before; got != tc.reads {
			t.Errorf("GET %s read the backlog %d times, want %d", tc.path, got, tc.reads)
		}
	}
	// A Queue no node serves: now the list reads it, and warns.
	f.enqueue(anyJob{W: "test.lonely"}, backwave.WithQueue("lonely"))
	before := st.reads.Load()
	_, body := get(t, ts, "/backwave/jobs")
	if st.reads.Load() == before || !strings.Contains(body, `data-unserved="lonely"`) {
		t.Errorf("with an unserved Queue the job list read the backlog %d times and warns: %v", st.reads.Load()-before, strings.Contains(body, `data-unserved="lonely"`))
	}
}
