package backwave_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// requeued is a job that fails until its handler is told otherwise.
type requeued struct{}

func (requeued) WireName() string { return "test.requeued" }

// seenAttempt is what a handler and the Middleware around it saw of one
// Attempt.
type seenAttempt struct {
	attempt, ceiling           int
	mwAttempt, mwCeiling       int
	jobAttempt, jobAttemptBase int
}

// TestHandlerSeesAttemptAndCeilingAfterRequeue runs a job with a budget of 3
// to dead-lettering, requeues it (an Operator Action), and runs it again, on
// every store (glossary: Attempt, Operator Action). The handler and its
// Middleware see the Attempt number the store charged — never reused, so
// it keeps counting across the requeue — and the ceiling of the life it
// runs in: Attempts 1 to 3 under ceiling 3, then 4 to 6 under ceiling 6,
// never an Attempt past its ceiling.
func TestHandlerSeesAttemptAndCeilingAfterRequeue(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		var (
			mu   sync.Mutex
			seen []seenAttempt
			mw   backwave.AttemptInfo
		)
		h := backwave.NewHandlers()
		err := backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[requeued]) error {
			stored, err := st.JobGet(ctx, j.ID)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, seenAttempt{
				attempt: int(j.Attempt), ceiling: j.AttemptCeiling,
				mwAttempt: int(mw.Attempt), mwCeiling: mw.AttemptCeiling,
				jobAttempt: int(stored.Attempt), jobAttemptBase: int(stored.AttemptBase),
			})
			if j.Attempt == 5 {
				return nil
			}
			return fmt.Errorf("attempt %d of ceiling %d fails", j.Attempt, j.AttemptCeiling)
		})
		if err != nil {
			t.Fatal(err)
		}
		c := startClient(t, st, backwave.Config{
			Handlers:    h,
			Groups:      []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
			RetryPolicy: backwave.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1},
			Middleware: []backwave.Middleware{func(ctx context.Context, a backwave.AttemptInfo, next func(context.Context) error) error {
				mu.Lock()
				mw = a
				mu.Unlock()
				return next(ctx)
			}},
			Logger: testLogger(t, slog.LevelError),
		})
		id, err := c.Enqueue(ctx, requeued{}, backwave.WithMaxAttempts(3))
		if err != nil {
			t.Fatal(err)
		}
		waitReal(t, st, id, job.StateDeadLettered)

		admin, err := c.Admin("ops:test")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Requeue(ctx, id); err != nil {
			t.Fatal(err)
		}
		j := waitReal(t, st, id, job.StateSucceeded)
		if j.Attempt != 5 || j.AttemptBase != 3 || j.Ceiling() != 6 {
			t.Errorf("stored job: Attempt %d, AttemptBase %d, Ceiling %d; want 5, 3, 6", j.Attempt, j.AttemptBase, j.Ceiling())
		}

		mu.Lock()
		defer mu.Unlock()
		want := []seenAttempt{
			{1, 3, 1, 3, 1, 0}, {2, 3, 2, 3, 2, 0}, {3, 3, 3, 3, 3, 0},
			{4, 6, 4, 6, 4, 3}, {5, 6, 5, 6, 5, 3},
		}
		if !slices.Equal(seen, want) {
			t.Errorf("handler saw (Attempt, AttemptCeiling, Middleware's pair, stored Attempt, AttemptBase)\n  %v\nwant\n  %v", seen, want)
		}
		for _, s := range seen {
			if s.attempt > s.ceiling {
				t.Errorf("handler saw Attempt %d past its ceiling %d", s.attempt, s.ceiling)
			}
		}
	})
}

// onEveryStore runs test in parallel on a fresh store of each adapter: the
// In-Memory Store, SQLite, and PostgreSQL when BACKWAVE_TEST_POSTGRES_URL is
// set. The stores run on the real clock.
func onEveryStore(t *testing.T, test func(t *testing.T, st store.Store)) {
	for name, open := range relinquishStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, open(t))
		})
	}
}

// waitReal polls the store on the real clock until the job is in state
// want, failing after 30 seconds.
func waitReal(t *testing.T, st store.Monitor, id job.ID, want job.State) job.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := st.JobGet(context.Background(), id)
		if err != nil {
			t.Fatalf("JobGet(%d): %v", id, err)
		}
		if j.State == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is %s at Attempt %d after 30s, want %s", id, j.State, j.Attempt, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
