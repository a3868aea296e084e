package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
)

// TestColour: colour only on a terminal, never with NO_COLOR or TERM=dumb,
// and never in a pipe, a file or /dev/null (a character device, but not a
// terminal).
func TestColour(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	if !colourWanted() {
		t.Error("colour not wanted with NO_COLOR empty and TERM=xterm-256color")
	}
	t.Setenv("NO_COLOR", "1")
	if colourWanted() {
		t.Error("colour wanted with NO_COLOR=1")
	}
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "dumb")
	if colourWanted() {
		t.Error("colour wanted with TERM=dumb")
	}

	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = devNull.Close() }()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	for name, w := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "/dev/null": devNull, "file": file} {
		if isTerminal(w) {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
}

// TestProgressFrames: the terminal frame is painted only with the palette
// on; the plain line a second never holds an escape code.
func TestProgressFrames(t *testing.T) {
	t.Parallel()
	counts := map[backwave.JobState]int{backwave.StateSucceeded: 90, backwave.StateDeadLettered: 3, backwave.StateRunning: 7}
	queues := []backwave.QueueInfo{{Name: "reports", Limit: 2, Running: 2}}
	frame := func(tty, colour bool) string {
		var b bytes.Buffer
		p := &progress{out: &b, tty: tty, colour: palette{on: colour}, start: time.Now().Add(-time.Second), lastAt: time.Now().Add(-time.Second)}
		p.draw(counts, queues, 100)
		return b.String()
	}
	if f := frame(true, true); !strings.Contains(f, "\x1b[32m") || !strings.Contains(f, "\x1b[31m") {
		t.Errorf("coloured frame has no green or red:\n%q", f)
	}
	if f := frame(true, false); strings.Contains(f, "\x1b[3") || strings.Contains(f, "\x1b[1m") {
		t.Errorf("frame without colour is painted:\n%q", f)
	}
	if f := frame(false, false); strings.Contains(f, "\x1b") || strings.Count(f, "\n") != 1 {
		t.Errorf("plain progress is not one plain line:\n%q", f)
	}
}

// TestDemoServesDashboardAndMetrics: the demo serves the dashboard over its
// store while it runs, granting every Permission, printing the URL with its first lines, and the
// fleet's Prometheus metrics beside it: a scrape shows per-Queue throughput
// and Attempt duration histograms (docs/observability.md names them).
func TestDemoServesDashboardAndMetrics(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	var running context.Context
	type scrape struct {
		page, enqueue, root, metrics string
		err                          error
	}
	got := make(chan scrape, 1)
	err := runDemo(context.Background(), demoOptions{
		path: filepath.Join(t.TempDir(), "demo.db"), duration: 4 * time.Second, out: &out,
		dashboard: func(ctx context.Context, s backwave.Store, metrics http.Handler) (string, error) {
			running = ctx
			url, err := demoDashboard(ctx, s, metrics)
			if err != nil {
				return "", err
			}
			go func() {
				var sc scrape
				defer func() { got <- sc }()
				base := strings.TrimSuffix(url, "/backwave/")
				sc.page, sc.err = httpGet(url)
				if sc.err == nil {
					sc.enqueue, sc.err = httpGet(url + "enqueue")
				}
				if sc.err == nil {
					sc.root, sc.err = httpGet(base + "/") // redirected to the prefix
				}
				// Wait for the fleet's first Attempts to show.
				for ctx.Err() == nil && sc.err == nil {
					if sc.metrics, sc.err = httpGet(base + "/metrics"); strings.Contains(sc.metrics, "messaging_process_duration") {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			return url, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "dashboard: http://127.0.0.1:") {
		t.Fatalf("the dashboard's URL is not the second line:\n%s", out.String())
	}
	if running == nil || running.Err() == nil {
		t.Error("the dashboard's context is not done once the demo has stopped")
	}
	sc := <-got
	if sc.err != nil {
		t.Fatalf("scraping the demo: %v", sc.err)
	}
	if !strings.Contains(sc.page, "Overview") {
		t.Errorf("the dashboard page lacks its overview:\n%.500s", sc.page)
	}
	if !strings.Contains(sc.root, "Overview") {
		t.Errorf("GET / does not lead to the dashboard:\n%.500s", sc.root)
	}
	// The demo's dashboard grants every Permission: its Enqueue page offers
	// the form rather than saying what is missing.
	if strings.Contains(sc.enqueue, "hidden-data") || !strings.Contains(sc.enqueue, "<form") {
		t.Errorf("the demo's Enqueue page is not granted:\n%.1500s", sc.enqueue)
	}
	for _, want := range []string{"messaging_process_duration_seconds_bucket", "messaging_client_consumed_messages", `messaging_destination_name="mail"`} {
		if !strings.Contains(sc.metrics, want) {
			t.Errorf("/metrics lacks %s:\n%.2000s", want, sc.metrics)
		}
	}
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// TestDBFromEnvironment: --db may come from $BACKWAVE_DB, as the demo's
// closing lines suggest.
func TestDBFromEnvironment(t *testing.T) {
	db := filepath.Join(t.TempDir(), "jobs.db")
	t.Setenv("BACKWAVE_DB", db)
	if out := ok(t, "migrate"); !strings.Contains(out, db+": migrated") {
		t.Fatalf("migrate with $BACKWAVE_DB: %s", out)
	}
	if out := ok(t, "queues", "list"); !strings.Contains(out, "(no queues)") {
		t.Fatalf("queues list with $BACKWAVE_DB: %s", out)
	}
}

func TestUnseenQueue(t *testing.T) {
	t.Parallel()
	known := []backwave.QueueInfo{{Name: "default"}, {Name: "mail"}, {Name: "reports"}}
	for _, tc := range []struct {
		queue, hint string
		unseen      bool
	}{
		{"mail", "", false},
		{"mial", `did you mean "mail"? known: default, mail, reports`, true},
		{"billing", "known: default, mail, reports", true},
	} {
		hint, unseen := unseenQueue(tc.queue, known)
		if hint != tc.hint || unseen != tc.unseen {
			t.Errorf("unseenQueue(%q) = %q, %t; want %q, %t", tc.queue, hint, unseen, tc.hint, tc.unseen)
		}
	}
	if _, unseen := unseenQueue("anything", nil); unseen {
		t.Error("a store that knows no Queue warned")
	}
}

func TestVersionRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{[]int{4}, "4"},
		{[]int{1, 2, 3, 4, 5, 6}, "1–6"},
		{[]int{1, 2, 4, 6, 7, 8}, "1, 2, 4, 6–8"},
	} {
		if got := versionRanges(tc.in); got != tc.want {
			t.Errorf("versionRanges(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/tmp/backwave-demo-1/demo.db":               "/tmp/backwave-demo-1/demo.db",
		"/tmp/my jobs.db":                            "'/tmp/my jobs.db'",
		"postgres://app@db/app?sslmode=off&schema=x": "'postgres://app@db/app?sslmode=off&schema=x'",
		"it's.db": `'it'\''s.db'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSelfCommand: the commands the demo prints run from where the user
// is: the installed command, go run in a checkout, or this executable.
func TestSelfCommand(t *testing.T) {
	t.Parallel()
	found := func(string) (string, error) { return "/home/u/go/bin/backwave", nil }
	missing := func(string) (string, error) { return "", errors.New("not found") }
	for _, tc := range []struct {
		exe        string
		lookPath   func(string) (string, error)
		inCheckout bool
		want       string
	}{
		{"/tmp/go-build123/b001/exe/backwave", found, true, "backwave"},
		{"/tmp/go-build123/b001/exe/backwave", missing, true, "go run ./cmd/backwave"},
		{"/tmp/go-build123/b001/exe/backwave", missing, false, "go run github.com/backwave/backwave/cmd/backwave@latest"},
		{"/home/u/go/bin/backwave", found, false, "backwave"},
		{"/home/u/src/bw", found, false, "/home/u/src/bw"},
		{"/home/u/my tools/bw", missing, false, "'/home/u/my tools/bw'"},
	} {
		if got := selfCommandFor(tc.exe, tc.lookPath, tc.inCheckout); got != tc.want {
			t.Errorf("selfCommandFor(%q, in checkout %v) = %q, want %q", tc.exe, tc.inCheckout, got, tc.want)
		}
	}
}
