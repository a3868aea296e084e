package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// TestJobsShowDependencies: `jobs show` lists a job's parents, with whether
// its latch counted each, and its dependents.
func TestJobsShowDependencies(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "jobs.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "a", Queue: "q", MaxAttempts: 1},
		{WireName: "b", Queue: "q", MaxAttempts: 1},
		{WireName: "c", Queue: "q", MaxAttempts: 1, Dependency: store.Dependency{
			Mode: job.DependencyOnAnyTerminal, Parents: []store.ParentRef{store.InBatch(0), store.InBatch(1)}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	show := ok(t, "jobs", "show", "--db", db, fmt.Sprint(ids[2]))
	for _, want := range []string{"awaiting_parent", "parents (on_any_terminal, 2 of 2 pending)", "scheduled  false"} {
		if !strings.Contains(show, want) {
			t.Fatalf("jobs show of the dependent lacks %q:\n%s", want, show)
		}
	}
	if show := ok(t, "jobs", "show", "--db", db, fmt.Sprint(ids[0])); !strings.Contains(show, fmt.Sprintf("dependents: %d", ids[2])) {
		t.Fatalf("jobs show of a parent lacks its dependent:\n%s", show)
	}
	var shown jobView
	if err := json.Unmarshal([]byte(ok(t, "jobs", "show", "--db", db, "--json", fmt.Sprint(ids[2]))), &shown); err != nil {
		t.Fatal(err)
	}
	if d := shown.Dependency; d == nil || d.Mode != "on_any_terminal" || d.Pending != 2 || len(d.Parents) != 2 || d.Parents[1].ID != int64(ids[1]) {
		t.Fatalf("jobs show --json dependency = %+v", shown.Dependency)
	}
}
