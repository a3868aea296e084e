package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// TestClaimAbandonedAtItsDeadlineLeasesNothing: a claim of a limited Queue
// waits its turn on the Queue's settings row (claim.go). When its caller's
// deadline passes first, the caller gets an error, and the server must give
// the claim up too. A claim the server went on to run after the caller left
// would lease jobs to a Worker that never learns of them (they would fill
// the Queue's Concurrency Limit until their Leases expire, each charged an
// Attempt), and every abandoned claim still queued on the row would
// lengthen the wait of the claims behind it, so once one claim missed its
// deadline all the rest would. Both connection modes hold: pgx answers a
// context's end during a query by sending the server a cancel request
// before closing the connection, which ends the wait.
func TestClaimAbandonedAtItsDeadlineLeasesNothing(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			s := openStore(t, m, postgres.Options{})
			ctx := t.Context()
			if err := s.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: "lim", Limit: 5}); err != nil {
				t.Fatal(err)
			}
			insert(t, s, "lim", 3)

			// The holder: another transaction holds the Queue's row, as a
			// slow claim does.
			holder, err := pgx.Connect(ctx, testURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close(context.Background())
			tx, err := holder.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `SELECT 1 FROM `+s.Schema()+`.queue WHERE name = 'lim' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}

			claimCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			jobs, err := s.JobClaim(claimCtx, store.ClaimParams{Worker: "w1", Queues: []string{"lim"}, Limit: 10, LeaseDuration: time.Minute})
			if err == nil {
				t.Fatalf("claim behind a held row answered %d jobs, want its deadline's error", len(jobs))
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("claim error (not DeadlineExceeded): %v", err)
			}
			// The holder goes on a while after the caller gave up, then
			// lets go; a claim the server still ran would lease now.
			time.Sleep(200 * time.Millisecond)
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			var running int
			if err := holder.QueryRow(ctx, `SELECT count(*) FROM `+s.Schema()+`.job WHERE state = 'running'`).Scan(&running); err != nil {
				t.Fatal(err)
			}
			if running != 0 {
				t.Fatalf("%d jobs were leased by a claim its caller had abandoned at its deadline", running)
			}
			var waiting int
			if err := holder.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%`+s.Schema()+`.queue%'`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting != 0 {
				t.Fatalf("%d abandoned claims still wait on the Queue's row", waiting)
			}
		})
	}
}

// TestClaimNeverJITCompiled: the claim runs with JIT compilation off
// (genericPlanSQL). Left on, a claim whose estimated cost passes
// jit_above_cost — as it does once the job table is large — compiles about
// 400 functions on every execution while it holds its limited Queues' rows,
// and the claims behind it miss their deadlines (docs/torture.md). The test
// forces the threshold to 0, so any claim left to JIT would show a JIT
// section in its plan.
func TestClaimNeverJITCompiled(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			s := openStore(t, m, postgres.Options{})
			ctx := t.Context()
			conn, err := pgx.Connect(ctx, testURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var available bool
			if err := conn.QueryRow(ctx, `SELECT pg_jit_available()`).Scan(&available); err != nil {
				t.Fatal(err)
			}
			if !available {
				t.Skip("this PostgreSQL server has no JIT provider: nothing to turn off")
			}
			if err := s.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: "lim", Limit: 5}); err != nil {
				t.Fatal(err)
			}
			insert(t, s, "lim", 3)
			insert(t, s, "free", 3)
			plan, err := postgres.ExplainClaimJIT(ctx, s, []string{"lim", "free"})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(plan, "JIT:") {
				t.Fatalf("the claim was JIT-compiled:\n%s", plan)
			}
			if !strings.Contains(plan, "Update on job") {
				t.Fatalf("the plan is not the claim's:\n%s", plan)
			}
		})
	}
}
