package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/storetest"
)

// fanWidth is the width of the fan-out/fan-in acceptance graph: 10,000
// leaves, 10,002 jobs; 1,000 under the race detector or -short.
func fanWidth() int {
	if raceEnabled || testing.Short() {
		return 1_000
	}
	return 10_000
}

// TestFanOutFanIn: a 10,000-node fan-out/fan-in graph, enqueued in one
// call, drains in both connection modes: the root releases 10,000
// dependents at once and the sink is released by the last of its 10,000
// parents. Each outcome batch settles its dependents with one set-based
// statement pipelined with the outcome write (pgx: one round trip per
// batch).
func TestFanOutFanIn(t *testing.T) {
	t.Parallel()
	width := fanWidth()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			s := openStore(t, m, postgres.Options{})
			start := time.Now()
			st, err := storetest.FanOutFanIn(t.Context(), s, width, 100)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s, width %d: %d jobs drained in %v with %d claims and %d outcome reports",
				m, width, st.Jobs, time.Since(start).Round(time.Millisecond), st.Claims, st.Reports)
		})
	}
}

// BenchmarkFanOutFanIn drains one 10,000-wide graph per iteration, pgx mode.
func BenchmarkFanOutFanIn(b *testing.B) {
	s := openStore(b, modePgx, postgres.Options{})
	for b.Loop() {
		if _, err := storetest.FanOutFanIn(b.Context(), s, 10_000, 100); err != nil {
			b.Fatal(err)
		}
	}
}

// claimReport claims up to limit jobs of queue as w and reports them all
// with result r; it returns how many it claimed.
func claimReport(ctx context.Context, s store.Store, w job.WorkerID, queue string, limit int, r core.Result) (int, error) {
	jobs, err := s.JobClaim(ctx, store.ClaimParams{Worker: w, Queues: []string{queue}, Limit: limit, LeaseDuration: time.Minute})
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	outs := make([]store.Outcome, len(jobs))
	for i, j := range jobs {
		info := core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}
		outs[i] = store.Outcome{Outcome: core.Decide(info, r, core.DefaultRetryPolicy())}
	}
	res, err := s.OutcomeReport(ctx, store.ReportParams{Worker: w, Outcomes: outs})
	if err != nil {
		return 0, err
	}
	for _, x := range res {
		if !x.Applied {
			return 0, fmt.Errorf("outcome %s not applied", x.Lease)
		}
	}
	return len(jobs), nil
}

// TestConcurrentFanIn: eight workers finish the parents of one sink in
// concurrent outcome batches. Each batch counts its parents off the sink's
// latch while the others do the same; the latch reaches zero exactly once:
// the sink is released once, never twice, never missed.
func TestConcurrentFanIn(t *testing.T) {
	t.Parallel()
	s := openStore(t, modePgx, postgres.Options{})
	ctx := t.Context()
	for round := range 5 {
		queue := fmt.Sprintf("p%d", round)
		const width = 240
		jobs := make([]store.NewJob, width+1)
		refs := make([]store.ParentRef, width)
		for i := range width {
			jobs[i] = store.NewJob{WireName: "w", Queue: queue, MaxAttempts: 1}
			refs[i] = store.InBatch(i)
		}
		jobs[width] = store.NewJob{WireName: "w", Queue: "sink", MaxAttempts: 1, Dependency: store.Dependency{Parents: refs}}
		ids, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Go(func() {
				for {
					n, err := claimReport(ctx, s, job.WorkerID(fmt.Sprintf("w%d", w)), queue, 3, core.ResultSucceeded)
					if err != nil {
						errs <- err
						return
					}
					if n == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		sink := ids[width]
		j, err := s.JobGet(ctx, sink)
		if err != nil || j.State != job.StateScheduled {
			t.Fatalf("round %d: the sink is %s (%v), want scheduled", round, j.State, err)
		}
		log, err := s.JobTransitions(ctx, sink)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 2 || log[1].Via != core.ViaRelease {
			t.Fatalf("round %d: the sink's Transition Log is %+v, want insert and one release", round, log)
		}
	}
}

// TestInsertRacesParentOutcome: dependents of a Running parent are
// inserted while the parent's outcome is reported. Whichever commits first,
// every edge is counted exactly once — by the parent's settle, or at the
// dependent's insert, which locks the parent and sees its new state — so no
// dependent is left Awaiting Parent.
func TestInsertRacesParentOutcome(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			s := openStore(t, m, postgres.Options{})
			ctx := t.Context()
			for round := range 30 {
				queue := fmt.Sprintf("p%d", round)
				result := core.ResultSucceeded
				if round%3 == 2 {
					result = core.ResultFailedPermanently
				}
				if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: queue, MaxAttempts: 1}}}); err != nil {
					t.Fatal(err)
				}
				parent, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{queue}, Limit: 1, LeaseDuration: time.Minute})
				if err != nil || len(parent) != 1 {
					t.Fatalf("claim the parent: %v, %v", parent, err)
				}
				var wg sync.WaitGroup
				var dependents []job.ID
				var mu sync.Mutex
				errs := make(chan error, 5)
				for range 4 {
					wg.Go(func() {
						ids, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{
							{WireName: "w", Queue: "d", MaxAttempts: 1, Dependency: store.Dependency{Parents: []store.ParentRef{store.Existing(parent[0].ID)}}},
							{WireName: "w", Queue: "d", MaxAttempts: 1, Dependency: store.Dependency{Mode: job.DependencyOnAnyTerminal, Parents: []store.ParentRef{store.Existing(parent[0].ID), store.InBatch(0)}}},
						}})
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						dependents = append(dependents, ids...)
						mu.Unlock()
					})
				}
				wg.Go(func() {
					info := core.AttemptInfo{Lease: parent[0].Lease(), MaxAttempts: 1}
					o := store.Outcome{Outcome: core.Decide(info, result, core.DefaultRetryPolicy())}
					if _, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: []store.Outcome{o}}); err != nil {
						errs <- err
					}
				})
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				for k, id := range dependents {
					j, err := s.JobGet(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					// Pairs: an on-success dependent of the parent, then an
					// on-any-terminal one of the parent and of the first.
					var want job.State
					switch {
					case k%2 == 0 && result == core.ResultSucceeded:
						want = job.StateScheduled
					case k%2 == 0:
						want = job.StateCancelled
					case result == core.ResultSucceeded:
						want = job.StateAwaitingParent // its other parent has not run
					default:
						want = job.StateScheduled // both parents ended
					}
					if j.State != want {
						t.Fatalf("round %d: dependent %d is %s, want %s", round, id, j.State, want)
					}
				}
			}
		})
	}
}

// TestTransactionalEnqueueGraph: a graph enqueued in the caller's own
// transaction (glossary, Transactional Enqueue), pgx and database/sql,
// commits or rolls back with it, edges included; its stored parent is
// locked against a concurrent outcome only until the caller's commit.
func TestTransactionalEnqueueGraph(t *testing.T) {
	t.Parallel()
	s := openStore(t, modePgx, postgres.Options{})
	ctx := t.Context()
	parent, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	graph := store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "w", Queue: "d", MaxAttempts: 1, Dependency: store.Dependency{Parents: []store.ParentRef{store.Existing(parent[0])}}},
		{WireName: "w", Queue: "d", MaxAttempts: 1, Dependency: store.Dependency{Parents: []store.ParentRef{store.InBatch(0)}}},
	}}
	insertIn := map[string]func(commit bool) []job.ID{
		"pgx": func(commit bool) []job.ID {
			conn, err := pgx.Connect(ctx, testURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(context.Background()) }()
			ids, err := s.JobInsertManyTx(ctx, tx, graph)
			if err != nil {
				t.Fatalf("JobInsertManyTx: %v", err)
			}
			if commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			return ids
		},
		"database/sql": func(commit bool) []job.ID {
			db := openDB(t, testURL(t))
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback() }()
			ids, err := s.JobInsertManySQLTx(ctx, tx, graph)
			if err != nil {
				t.Fatalf("JobInsertManySQLTx: %v", err)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			return ids
		},
	}
	var committed []job.ID
	for _, name := range []string{"pgx", "database/sql"} {
		gone := insertIn[name](false)
		if _, err := s.JobGet(ctx, gone[0]); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: JobGet after rollback: %v, want ErrNotFound", name, err)
		}
		committed = append(committed, insertIn[name](true)...)
	}
	info, err := s.JobDependencies(ctx, parent[0])
	if err != nil || len(info.Dependents) != 2 {
		t.Fatalf("the parent's dependents after two commits and two rollbacks: %v, %v", info.Dependents, err)
	}
	if n, err := claimReport(ctx, s, "w", "q", 1, core.ResultSucceeded); err != nil || n != 1 {
		t.Fatalf("finish the parent: %d, %v", n, err)
	}
	for k, id := range committed {
		want := job.StateScheduled
		if k%2 == 1 {
			want = job.StateAwaitingParent
		}
		if j, err := s.JobGet(ctx, id); err != nil || j.State != want {
			t.Fatalf("job %d is %v (%v), want %s", id, j.State, err, want)
		}
	}
}
