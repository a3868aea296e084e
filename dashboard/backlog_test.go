package dashboard

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
)

// TestBacklogShown: the Overview and the Queues page show a Queue's ready
// jobs (Scheduled and due) apart from its later ones, with the oldest ready
// job's age, and the Overview's throughput comes from the store at once.
func TestBacklogShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(okJob{}, backwave.WithQueue("backlog"), backwave.WithRunAt(time.Now().Add(-2*time.Minute)))
	f.enqueue(okJob{}, backwave.WithQueue("backlog"))
	f.enqueue(okJob{}, backwave.WithQueue("backlog"), backwave.WithDelay(time.Hour))
	done := f.enqueue(okJob{Out: "x"})
	f.waitState(done, backwave.StateSucceeded)
	_, ts := f.serve(Options{Policy: allowAll()})
	row := regexp.MustCompile(`(?s)<tbody class="queue" data-queue="backlog">.*?</tbody>`)
	for _, path := range []string{"/backwave/", "/backwave/queues"} {
		status, body := get(t, ts, path)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, status)
		}
		r := body
		if m := row.FindString(body); m != "" {
			r = m
		} else if i := strings.Index(body, ">backlog</a>"); i >= 0 {
			r = body[i:min(len(body), i+400)]
		} else {
			t.Fatalf("GET %s: no backlog Queue row", path)
		}
		for _, want := range []string{`data-ready="2"`, `data-later="1"`, `>2m`} {
			if !strings.Contains(r, want) {
				t.Errorf("GET %s: no %q in the backlog row %s", path, want, r)
			}
		}
	}
	_, body := get(t, ts, "/backwave/")
	if !strings.Contains(body, "<strong>1</strong> succeeded") {
		t.Errorf("overview throughput does not count the job just finished:\n%s", body)
	}
}
