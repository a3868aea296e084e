package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
	"github.com/backwave/backwave/store/storetest"
)

// fanWidth is the width of the fan-out/fan-in acceptance graph: 10,000
// parents of one sink, 10,002 jobs. Under the race detector, where the
// engine runs an order of magnitude slower, a 1,000-wide graph keeps the
// test short; the full size runs in every other build.
func fanWidth() int {
	if raceEnabled || testing.Short() {
		return 1_000
	}
	return 10_000
}

// TestFanOutFanIn: a 10,000-node fan-out/fan-in graph, enqueued in one
// call, drains: the root releases 10,000 dependents at once, and the sink
// is released by the last of its 10,000 parents, each batch of outcomes
// settling its dependents in one set-based pass.
func TestFanOutFanIn(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, sqlite.Options{})
	width := fanWidth()
	start := time.Now()
	st, err := storetest.FanOutFanIn(t.Context(), s, width, 100)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("width %d: %d jobs drained in %v with %d claims and %d outcome reports",
		width, st.Jobs, time.Since(start).Round(time.Millisecond), st.Claims, st.Reports)
}

// BenchmarkFanOutFanIn drains one 10,000-wide graph per iteration.
func BenchmarkFanOutFanIn(b *testing.B) {
	for b.Loop() {
		s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "jobs.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := storetest.FanOutFanIn(b.Context(), s, 10_000, 100); err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
	}
}

// TestTransactionalEnqueueGraph: a graph enqueued inside the application's
// own transaction (glossary, Transactional Enqueue) commits or rolls back
// with it, edges included.
func TestTransactionalEnqueueGraph(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, app := openCoResident(t)
	parent, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	graph := store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "w", Queue: "q", MaxAttempts: 1, Dependency: store.Dependency{Parents: []store.ParentRef{store.Existing(parent[0])}}},
		{WireName: "w", Queue: "q", MaxAttempts: 1, Dependency: store.Dependency{Parents: []store.ParentRef{store.InBatch(0)}}},
	}}
	for _, commit := range []bool{false, true} {
		tx, err := app.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := s.JobInsertManyTx(ctx, tx, graph)
		if err != nil {
			t.Fatalf("JobInsertManyTx: %v", err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.JobDependencies(ctx, parent[0])
		if err != nil {
			t.Fatal(err)
		}
		if !commit {
			if len(info.Dependents) != 0 {
				t.Fatalf("after a rollback the parent has dependents %v", info.Dependents)
			}
			if _, err := s.JobGet(ctx, ids[0]); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("JobGet after rollback: %v", err)
			}
			continue
		}
		if len(info.Dependents) != 1 || info.Dependents[0] != ids[0] {
			t.Fatalf("after the commit the parent's dependents are %v, want [%d]", info.Dependents, ids[0])
		}
		claimed, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: 10, LeaseDuration: time.Minute})
		if err != nil || len(claimed) != 1 || claimed[0].ID != parent[0] {
			t.Fatalf("claimed %v, %v; want only the parent", claimed, err)
		}
		o := store.Outcome{Outcome: core.Outcome{Lease: claimed[0].Lease(), State: job.StateSucceeded, Via: core.ViaSucceed}}
		if _, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: []store.Outcome{o}}); err != nil {
			t.Fatal(err)
		}
		if j, err := s.JobGet(ctx, ids[0]); err != nil || j.State != job.StateScheduled {
			t.Fatalf("the dependent after its parent succeeded: %v, %v", j.State, err)
		}
		if j, err := s.JobGet(ctx, ids[1]); err != nil || j.State != job.StateAwaitingParent {
			t.Fatalf("the grandchild: %v, %v", j.State, err)
		}
	}
}
