package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// uniqueJob is a job holding key while it is live.
func uniqueJob(key string) store.NewJob {
	return store.NewJob{WireName: "order.ship", Queue: "orders", MaxAttempts: 3,
		Unique: store.Unique{Key: key, Scope: store.UniqueWhileLive}}
}

// TestUniqueInCallersTransaction: a unique key taken inside the caller's
// transaction (Transactional Enqueue) holds off every other inserter once
// it commits, and an inserter racing the open transaction waits for it and
// then answers its job; a rollback frees the key.
func TestUniqueInCallersTransaction(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "commit", false: "rollback"}[commit]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := openStore(t, modePgx, postgres.Options{})
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
			ids, err := s.JobInsertManyTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{uniqueJob("order:1"), uniqueJob("order:1")}})
			if err != nil {
				t.Fatalf("JobInsertManyTx: %v", err)
			}
			if ids[0] != ids[1] {
				t.Fatalf("JobInsertManyTx = %v: the second job of the key must answer the first", ids)
			}
			racer := make(chan answer, 1)
			go func() {
				res, err := s.JobInsertManyResults(ctx, store.InsertManyParams{Jobs: []store.NewJob{uniqueJob("order:1")}})
				racer <- answer{res, err}
			}()
			waitForLock(t, testURL(t), s.Schema()+".job_unique", racer)
			if commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			a := <-racer
			if a.err != nil {
				t.Fatalf("JobInsertManyResults: %v", a.err)
			}
			want := store.InsertResult{ID: ids[0]}
			if !commit {
				want = store.InsertResult{ID: a.res[0].ID, Inserted: true}
				if a.res[0].ID == ids[0] {
					t.Fatalf("after the rollback the key answered the rolled-back job %d", ids[0])
				}
			}
			if a.res[0] != want {
				t.Fatalf("racing insert = %+v, want %+v", a.res[0], want)
			}
			jobs, err := s.JobList(ctx, store.JobListParams{})
			if err != nil || len(jobs) != 1 || jobs[0].ID != want.ID || jobs[0].State != job.StateScheduled {
				t.Fatalf("JobList = %+v, %v; want job %d alone", jobs, err, want.ID)
			}
		})
	}
}

type answer struct {
	res []store.InsertResult
	err error
}

// waitForLock returns once a statement naming table waits on a lock in the
// database (read from pg_stat_activity), failing t if racer answers first
// or no statement waits within ten seconds.
func waitForLock(t *testing.T, url, table string, racer <-chan answer) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case a := <-racer:
			t.Fatalf("an insert of the key answered %+v, %v while the caller's transaction held it open", a.res, a.err)
		default:
		}
		var waiting bool
		if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0)`, table).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no insert waited on %s", table)
		}
	}
}
