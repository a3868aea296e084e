package backwave_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// slow is a job whose first Attempt outlasts its timeout.
type slow struct{}

func (slow) WireName() string { return "test.slow" }

// timeoutGroup is a Worker Group with a short Lease and fast beats, so a
// Lease left to lapse expires within a second or two of real time.
func timeoutGroup(poolSize int) backwave.WorkerGroupOptions {
	g := backwave.DefaultWorkerGroup("g", backwave.Strict(backwave.DefaultQueue))
	g.PoolSize = poolSize
	g.LeaseDuration = time.Second
	g.HeartbeatInterval = 250 * time.Millisecond
	g.PollInterval = 20 * time.Millisecond
	g.MaintenanceInterval = 100 * time.Millisecond
	return g
}

// On every store, a handler that honours its context: at its own attempt
// timeout (WithAttemptTimeout, over Config.AttemptTimeout) the context ends
// with ErrAttemptTimeout, the Attempt fails with Failure Detail naming the
// timeout, and the retry policy runs the job again.
func TestAttemptTimeoutFailsTheAttempt(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		cause := make(chan error, 1)
		h := backwave.NewHandlers()
		must(t, backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[slow]) error {
			if j.Attempt > 1 {
				return nil
			}
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		}, backwave.WithAttemptTimeout(300*time.Millisecond)))
		c := startClient(t, st, backwave.Config{
			Handlers:       h,
			Groups:         []backwave.WorkerGroupOptions{timeoutGroup(2)},
			AttemptTimeout: time.Hour,
			RetryPolicy:    backwave.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1},
			Logger:         testLogger(t, slog.LevelError),
		})
		id, err := c.Enqueue(ctx, slow{}, backwave.WithMaxAttempts(3))
		must(t, err)
		if err := <-cause; !errors.Is(err, backwave.ErrAttemptTimeout) {
			t.Errorf("cause = %v, want ErrAttemptTimeout", err)
		}
		j := waitReal(t, st, id, job.StateSucceeded)
		if j.Attempt != 2 || j.RetryCause != job.RetryCauseHandlerFailed {
			t.Errorf("job at Attempt %d, Retry Cause %q; want 2, handler_failed", j.Attempt, j.RetryCause)
		}
		log, err := st.JobTransitions(ctx, id)
		must(t, err)
		var detail string
		for _, tr := range log {
			if tr.Via == core.ViaRetry && tr.Attempt == 1 {
				detail = tr.FailureDetail
			}
		}
		if !strings.HasPrefix(detail, backwave.ErrAttemptTimeout.Error()) || !strings.Contains(detail, "300ms") {
			t.Errorf("Failure Detail of Attempt 1 = %q; want it to name the attempt timeout of 300ms", detail)
		}
	})
}

// claimWatch counts one node's claims and records which of its outcomes the
// store applied.
type claimWatch struct {
	store.Store
	claims atomic.Int32
	rec    *outcomes
}

func (w *claimWatch) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	w.claims.Add(1)
	return w.Store.JobClaim(ctx, p)
}

func (w *claimWatch) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	res, err := w.Store.OutcomeReport(ctx, p)
	if err == nil {
		w.rec.record(res)
	}
	return res, err
}

// On every store, a handler that ignores its context past the timeout and
// the grace: its node stops renewing the Lease, the Lease lapses and
// expiry counts the Attempt like a failure, and another node runs the job
// again. Meanwhile the stuck handler keeps its node's only Worker, so that
// node claims nothing (Backpressure); when it returns at last its outcome
// is fenced out, and the Worker runs the next job.
func TestIgnoredAttemptTimeoutRunsTheJobElsewhere(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		w1 := &claimWatch{Store: st, rec: &outcomes{count: make(map[job.Lease]*[2]int)}}
		started, release := make(chan struct{}), make(chan struct{})
		defer func() {
			select {
			case <-release:
			default:
				close(release)
			}
		}()
		cause := make(chan error, 1)
		var runs1 atomic.Int32
		h1 := backwave.NewHandlers()
		must(t, backwave.AddHandlerFunc(h1, func(ctx context.Context, j *backwave.Job[slow]) error {
			if runs1.Add(1) > 1 {
				return nil
			}
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			<-release // deaf to its context
			return nil
		}))
		c1 := startClient(t, w1, backwave.Config{
			Handlers:            h1,
			Groups:              []backwave.WorkerGroupOptions{timeoutGroup(1)},
			NodeID:              "n1",
			AttemptTimeout:      200 * time.Millisecond,
			AttemptTimeoutGrace: 100 * time.Millisecond,
			Logger:              testLogger(t, slog.LevelError),
		})
		id, err := c1.Enqueue(ctx, slow{}, backwave.WithMaxAttempts(3))
		must(t, err)
		<-started
		claims := w1.claims.Load()
		if err := <-cause; !errors.Is(err, backwave.ErrAttemptTimeout) {
			t.Errorf("cause = %v, want ErrAttemptTimeout", err)
		}

		// Renewed no more, the Lease lapses and n1's own maintenance
		// expires it. The job is due, but n1's only Worker is still taken:
		// its polls (every 20ms) claim nothing.
		waitFor(t, "the Lease expired", func() bool { return getJob(t, st, id).RetryCause == job.RetryCauseLeaseExpired })
		time.Sleep(300 * time.Millisecond)
		if j := getJob(t, st, id); j.State != job.StateScheduled || w1.claims.Load() != claims {
			t.Fatalf("with its Worker taken, n1 claimed %d times more; job %s at Attempt %d",
				w1.claims.Load()-claims, j.State, j.Attempt)
		}

		h2 := backwave.NewHandlers()
		must(t, backwave.AddHandlerFunc(h2, func(context.Context, *backwave.Job[slow]) error { return nil }))
		c2 := startClient(t, st, backwave.Config{Handlers: h2, Groups: []backwave.WorkerGroupOptions{timeoutGroup(1)}, NodeID: "n2"})
		j := waitReal(t, st, id, job.StateSucceeded)
		must(t, c2.Stop(ctx))
		if j.Attempt != 2 {
			t.Errorf("job succeeded at Attempt %d, want 2 (the re-run on n2)", j.Attempt)
		}

		close(release)
		stuck := job.Lease{ID: id, Attempt: 1}
		waitFor(t, "the late outcome reported", func() bool { a, s := w1.rec.get(stuck); return a+s > 0 })
		if applied, stale := w1.rec.get(stuck); applied != 0 || stale != 1 {
			t.Errorf("the timed-out Attempt's outcome: applied %d, stale %d; want 0 and 1", applied, stale)
		}
		log, err := st.JobTransitions(ctx, id)
		must(t, err)
		var vias []core.Via
		for _, tr := range log {
			vias = append(vias, tr.Via)
		}
		want := []core.Via{core.ViaInsert, core.ViaClaim, core.ViaExpire, core.ViaClaim, core.ViaSucceed}
		if !slices.Equal(vias, want) {
			t.Errorf("Transition Log %v, want %v", vias, want)
		}

		// The Worker is free again.
		next, err := c1.Enqueue(ctx, slow{})
		must(t, err)
		waitReal(t, st, next, job.StateSucceeded)
		must(t, c1.Stop(ctx))
		if n := runs1.Load(); n != 2 {
			t.Errorf("n1 ran %d Attempts, want 2 (the stuck one and the next job)", n)
		}
	})
}
