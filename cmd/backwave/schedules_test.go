package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/sqlite"
)

type nightly struct{}

func (nightly) WireName() string { return "report.nightly" }

// TestSchedulesCommands registers a schedule from code and works it from the
// command line: list with last and next occurrence, trigger now, pause,
// resume, the occurrence records, remove — and bad input.
func TestSchedulesCommands(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "jobs.db")
	s, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := backwave.NewClient(s, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = c.RegisterSchedule(context.Background(), backwave.RecurringSchedule{
		Name: "nightly", Cron: "30 2 * * *", Zone: "America/New_York", Args: nightly{}, NoOverlap: true,
		Options: []backwave.EnqueueOption{backwave.WithQueue("reports")},
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()

	var listed []struct {
		Name, Cron, Zone, Queue, Next, Last string
		NoOverlap                           bool `json:"no_overlap"`
		Paused                              bool
	}
	if err := json.Unmarshal([]byte(ok(t, "schedules", "list", "--db", db, "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Name != "nightly" || listed[0].Queue != "reports" || !listed[0].NoOverlap || listed[0].Next == "" || listed[0].Last != "" {
		t.Fatalf("schedules list --json = %+v", listed)
	}
	if got := ok(t, "schedules", "list", "--db", db); !strings.Contains(got, "America/New_York") || !strings.Contains(got, "02:30:00.000 -0") {
		t.Fatalf("schedules list:\n%s", got)
	}
	if got := ok(t, "schedules", "trigger", "--db", db, "--actor", "alice", "nightly"); !strings.Contains(got, "triggered nightly: job 1") {
		t.Fatalf("trigger: %s", got)
	}
	// No-Overlap: the triggered job is still waiting.
	if r := runCLI(t, "schedules", "trigger", "--db", db, "nightly"); r.code != 1 || !strings.Contains(r.stderr, "No-Overlap") {
		t.Fatalf("a second trigger: exit %d, %q", r.code, r.stderr)
	}
	ok(t, "schedules", "pause", "--db", db, "nightly")
	if got := ok(t, "schedules", "list", "--db", db); !strings.Contains(strings.Join(strings.Fields(got), " "), "skip true true - ") {
		t.Fatalf("paused schedule listed as:\n%s", got)
	}
	ok(t, "schedules", "resume", "--db", db, "nightly")
	occ := ok(t, "schedules", "occurrences", "--db", db, "nightly")
	if !strings.Contains(occ, "triggered") || !strings.Contains(occ, "alice") {
		t.Fatalf("occurrences:\n%s", occ)
	}
	if audit := ok(t, "jobs", "audit", "--db", db); !strings.Contains(audit, "schedule_trigger") || !strings.Contains(audit, "schedule_pause") {
		t.Fatalf("audit trail:\n%s", audit)
	}
	ok(t, "schedules", "remove", "--db", db, "nightly")
	if got := ok(t, "schedules", "list", "--db", db); !strings.Contains(got, "(no schedules)") {
		t.Fatalf("list after remove:\n%s", got)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"schedules", "pause", "--db", db, "nightly"}, 1, `no such schedule "nightly"`},
		{[]string{"schedules", "occurrences", "--db", db, "nightly"}, 1, `no such schedule "nightly"`},
		{[]string{"schedules", "trigger", "--db", db}, 2, "usage"},
		{[]string{"schedules", "pause", "--db", db, " bad"}, 2, "schedule name"},
		{[]string{"schedules", "occurrences", "--db", db, "--limit", "0", "x"}, 2, "--limit"},
	} {
		r := runCLI(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("backwave %q: exit %d, stderr %q; want exit %d and one line with %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}
