package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// TestLimitUnderContention checks the Concurrency Limit (glossary: "a
// per-Queue, cluster-wide cap … enforced at claim time") with twenty
// claimers on twenty connections — ten through pgx, ten through
// database/sql — racing over one limited Queue (with an unlimited one to
// fall through to), while an observer on a connection of its own samples
// the limited Queue's Running count. It must never exceed the limit, and
// every job must end Succeeded exactly once.
func TestLimitUnderContention(t *testing.T) {
	t.Parallel()
	const (
		limit     = 3
		limited   = 240
		unlimited = 120
		perMode   = 10
	)
	pgxStore := openStoreConns(t, modePgx, postgres.Options{}, perMode)
	sqlStore := openStoreConns(t, modeSQL, postgres.Options{Schema: pgxStore.Schema()}, perMode)
	ctx := t.Context()
	if err := pgxStore.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: "limited", Limit: limit}); err != nil {
		t.Fatal(err)
	}
	insert(t, pgxStore, "limited", limited)
	insert(t, pgxStore, "unlimited", unlimited)

	// The observer: one statement, one snapshot, one exact Running count.
	observer, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close(context.Background())
	stop := make(chan struct{})
	var (
		maxSeen, samples int64
		observerErr      error
		observerDone     = make(chan struct{})
	)
	go func() {
		defer close(observerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var n int64
			err := observer.QueryRow(ctx, fmt.Sprintf(
				`SELECT count(*) FROM %s.job WHERE queue = 'limited' AND state = 'running'`, pgxStore.Schema())).Scan(&n)
			if err != nil {
				observerErr = err
				return
			}
			samples++
			maxSeen = max(maxSeen, n)
		}
	}()

	var (
		wg      sync.WaitGroup
		done    atomic.Int64
		applied sync.Map // job.ID → struct{}
		errs    = make(chan error, 2*perMode)
	)
	claimer := func(s *postgres.Store, i int) {
		defer wg.Done()
		w := job.WorkerID(fmt.Sprintf("claimer-%s-%d", s.Schema(), i))
		for done.Load() < limited+unlimited {
			jobs, err := s.JobClaim(ctx, store.ClaimParams{
				Worker: w, Queues: []string{"limited", "unlimited"}, Limit: 1 + i%3, LeaseDuration: time.Hour,
			})
			if err != nil {
				errs <- err
				return
			}
			if len(jobs) == 0 {
				continue
			}
			outs := make([]store.Outcome, len(jobs))
			for k, j := range jobs {
				outs[k] = store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}, core.ResultSucceeded, core.DefaultRetryPolicy())}
			}
			res, err := s.OutcomeReport(ctx, store.ReportParams{Worker: w, Outcomes: outs})
			if err != nil {
				errs <- err
				return
			}
			for _, r := range res {
				if !r.Applied {
					errs <- fmt.Errorf("outcome %s of a live Lease was not applied", r.Lease)
					return
				}
				if _, dup := applied.LoadOrStore(r.Lease.ID, struct{}{}); dup {
					errs <- fmt.Errorf("job %d succeeded twice", r.Lease.ID)
					return
				}
				done.Add(1)
			}
		}
	}
	for i := range perMode {
		wg.Add(2)
		go claimer(pgxStore, i)
		go claimer(sqlStore, perMode+i)
	}
	wg.Wait()
	close(stop)
	<-observerDone
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}
	if observerErr != nil {
		t.Fatalf("observer: %v", observerErr)
	}
	t.Logf("observer took %d samples; highest Running count %d (limit %d)", samples, maxSeen, limit)
	if maxSeen > limit {
		t.Fatalf("Running reached %d in a Queue limited to %d", maxSeen, limit)
	}
	counts, err := pgxStore.JobCountByState(ctx, store.CountParams{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (map[job.State]int{job.StateSucceeded: limited + unlimited}); fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("jobs by state = %v, want %v", counts, want)
	}
}

// insert inserts n jobs due now in queue.
func insert(t testing.TB, s *postgres.Store, queue string, n int) []job.ID {
	t.Helper()
	jobs := make([]store.NewJob, n)
	for i := range jobs {
		jobs[i] = store.NewJob{WireName: "test.job", Queue: queue, MaxAttempts: 3}
	}
	ids, err := s.JobInsertMany(context.Background(), store.InsertManyParams{Jobs: jobs})
	if err != nil {
		t.Fatalf("insert %d jobs in %s: %v", n, queue, err)
	}
	return ids
}
