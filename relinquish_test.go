package backwave_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// stubborn is a job whose handler runs until its context is cancelled.
type stubborn struct{}

func (stubborn) WireName() string { return "test.stubborn" }

// relinquishStores opens one fresh store per adapter: the In-Memory Store,
// SQLite, PostgreSQL when BACKWAVE_TEST_POSTGRES_URL is set, and MariaDB
// when BACKWAVE_TEST_MARIADB_URL is set.
func relinquishStores(t *testing.T) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"memstore": func(*testing.T) store.Store { return newStore() },
		"sqlite": func(t *testing.T) store.Store {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "jobs.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		"postgres": func(t *testing.T) store.Store {
			url, schema := pgSchema(t)
			return openPgStore(t, url, schema)
		},
		// Through a transaction pooler (pooler_env_test.go).
		"postgres/pgbouncer": func(t *testing.T) store.Store {
			url, schema := pgSchema(t)
			through, _ := pooledURLs(t, url)
			return openPgStore(t, through, schema)
		},
		"mariadb": openMariaStore,
	}
}

// openPgStore opens a PostgreSQL store on url in schema, closed at cleanup.
func openPgStore(t *testing.T, url, schema string) store.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestStopRelinquishesEveryStore stops a Client while its handler runs, on
// each store (glossary, Relinquish): the job is handed back at once —
// Scheduled and due now, no backoff, its Attempt kept, no Retry Cause (not
// Retrying) — and a job that keeps being relinquished still dead-letters
// at its attempt ceiling.
func TestStopRelinquishesEveryStore(t *testing.T) {
	t.Parallel()
	for name, open := range relinquishStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			ctx := context.Background()
			const ceiling = 3
			var id job.ID
			for attempt := 1; attempt <= ceiling; attempt++ {
				started := make(chan struct{}, 1)
				h := backwave.NewHandlers()
				err := backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[stubborn]) error {
					started <- struct{}{}
					<-ctx.Done()
					return context.Cause(ctx)
				})
				if err != nil {
					t.Fatal(err)
				}
				g := backwave.DefaultWorkerGroup("g", backwave.Strict(backwave.DefaultQueue))
				g.PollInterval = 20 * time.Millisecond
				c, err := backwave.NewClient(st, backwave.Config{
					Handlers:     h,
					Groups:       []backwave.WorkerGroupOptions{g},
					DrainTimeout: 20 * time.Millisecond,
					Logger:       testLogger(t, slog.LevelError),
				})
				if err != nil {
					t.Fatal(err)
				}
				if attempt == 1 {
					if id, err = c.Enqueue(ctx, stubborn{}, backwave.WithMaxAttempts(ceiling)); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.Start(ctx); err != nil {
					t.Fatal(err)
				}
				<-started // claimed and running: its Lease runs a minute
				if err := c.Stop(ctx); err != nil {
					t.Fatalf("Stop: %v", err)
				}
				j, err := st.JobGet(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				log, err := st.JobTransitions(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				last := log[len(log)-1]
				if last.Via != core.ViaRelinquish || j.Attempt != job.Attempt(attempt) || j.RetryCause != job.RetryCauseNone || j.Retrying() {
					t.Fatalf("after stop %d: %s by %s at Attempt %d, Retry Cause %q; want relinquished at Attempt %d with no cause",
						attempt, j.State, last.Via, j.Attempt, j.RetryCause, attempt)
				}
				if attempt < ceiling {
					if j.State != job.StateScheduled || j.ScheduledAt.After(time.Now()) {
						t.Fatalf("after stop %d: %s due %v; want Scheduled and due at once", attempt, j.State, j.ScheduledAt)
					}
				} else if j.State != job.StateDeadLettered {
					t.Fatalf("after stop %d at the ceiling: %s, want dead_lettered", attempt, j.State)
				}
			}
		})
	}
}
