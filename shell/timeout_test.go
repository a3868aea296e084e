package shell_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// A handler that honours its context: at its Wire Name's attempt timeout
// (node.Config.AttemptTimeouts, over the Driver's default) the context ends
// with ErrAttemptTimeout as its cause, the failed Attempt's Failure Detail
// names the timeout, and the retry policy schedules the next Attempt like
// for any failure.
func TestPumpAttemptTimeoutFailsTheAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		id := insert(t, st, 1, 3)[0]
		type ended struct {
			after time.Duration
			cause error
		}
		first := make(chan ended, 1)
		p := newPump(t, st, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			if j.Attempt > 1 {
				return shell.Result{Result: core.ResultSucceeded}
			}
			began := time.Now()
			<-ctx.Done()
			first <- ended{time.Since(began), context.Cause(ctx)}
			return shell.Result{Result: core.ResultFailed, FailureDetail: ctx.Err().Error()}
		}), func(c *shell.Config) {
			c.Driver.AttemptTimeout = time.Hour
			c.Driver.AttemptTimeouts = map[string]time.Duration{"w": 2 * time.Second}
		})
		start(t, p)
		e := <-first
		if !errors.Is(e.cause, shell.ErrAttemptTimeout) || e.after != 2*time.Second {
			t.Errorf("handler's context ended after %v with cause %v; want 2s and ErrAttemptTimeout", e.after, e.cause)
		}
		waitFor(t, "the retry succeeded", func() bool { return stateOf(t, st, id).State == job.StateSucceeded })
		stop(t, p)
		if j := stateOf(t, st, id); j.Attempt != 2 || j.RetryCause != job.RetryCauseHandlerFailed {
			t.Errorf("job at Attempt %d, Retry Cause %q; want 2, handler_failed", j.Attempt, j.RetryCause)
		}
		want := shell.TimeoutDetail(2*time.Second, context.DeadlineExceeded.Error())
		if got := detailOf(t, st, id, core.ViaRetry); got != want {
			t.Errorf("Failure Detail of the retry = %q, want %q", got, want)
		}
	})
}

// watched records what one Pump asks of the store.
type watched struct {
	*memstore.Store
	claims atomic.Int32

	mu      sync.Mutex
	renewed map[job.Lease]int
	applied map[job.Lease]bool // false: the fence found it stale
}

func (w *watched) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	w.claims.Add(1)
	return w.Store.JobClaim(ctx, p)
}

func (w *watched) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	w.mu.Lock()
	for _, l := range p.Leases {
		w.renewed[l]++
	}
	w.mu.Unlock()
	return w.Store.LeaseRenew(ctx, p)
}

func (w *watched) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	res, err := w.Store.OutcomeReport(ctx, p)
	w.mu.Lock()
	for _, r := range res {
		w.applied[r.Lease] = r.Applied
	}
	w.mu.Unlock()
	return res, err
}

func (w *watched) reported(l job.Lease) (applied, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	applied, ok = w.applied[l]
	return applied, ok
}

// A handler that ignores its context past the timeout and the grace has its
// Lease renewed no more (node.LetLapse): the Lease lapses, expiry counts the
// Attempt like a failure, and another node runs the job again. Until the
// stuck handler returns it still occupies its Worker, so its node claims
// nothing (Backpressure); its late outcome is then reported and fenced out,
// and the freed Worker runs the next job.
func TestPumpIgnoredTimeoutLetsTheLeaseLapse(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		w1 := &watched{Store: st, renewed: map[job.Lease]int{}, applied: map[job.Lease]bool{}}
		id := insert(t, st, 1, 5)[0]
		stuck := job.Lease{ID: id, Attempt: 1}
		started, release := make(chan struct{}), make(chan struct{})
		cause := make(chan error, 1)
		var runs1 atomic.Int32
		p1 := newPump(t, w1, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			runs1.Add(1)
			if j.Lease() != stuck {
				return shell.Result{Result: core.ResultSucceeded}
			}
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			<-release // ignores its context
			return shell.Result{Result: core.ResultSucceeded}
		}), func(c *shell.Config) {
			c.Driver.PoolSize = 1
			c.Driver.AttemptTimeout = 2 * time.Second
			c.Driver.AttemptTimeoutGrace = time.Second
		})
		start(t, p1)
		<-started
		claims := w1.claims.Load()
		if err := <-cause; !errors.Is(err, shell.ErrAttemptTimeout) {
			t.Errorf("cause = %v, want ErrAttemptTimeout", err)
		}
		// The first heartbeat (10s) is past timeout and grace: no renewal,
		// so the 30s Lease lapses and w1's own maintenance expires it.
		waitFor(t, "the Lease expired", func() bool { return stateOf(t, st, id).RetryCause == job.RetryCauseLeaseExpired })
		// The job is due, but w1's only Worker is still taken: its polls
		// (every 100ms) claim nothing.
		time.Sleep(2 * time.Second)
		if j := stateOf(t, st, id); j.State != job.StateScheduled || w1.claims.Load() != claims {
			t.Errorf("with its Worker taken, w1 claimed %d times more; job %s", w1.claims.Load()-claims, j.State)
		}

		p2 := newPump(t, st, shell.ExecutorFunc(succeed), func(c *shell.Config) { c.Driver.Worker = "w2" })
		start(t, p2)
		waitFor(t, "w2 ran the job", func() bool { return stateOf(t, st, id).State == job.StateSucceeded })
		stop(t, p2)

		close(release)
		waitFor(t, "the late outcome reported", func() bool { _, ok := w1.reported(stuck); return ok })
		if applied, _ := w1.reported(stuck); applied {
			t.Errorf("the timed-out Attempt's late outcome applied; want it fenced out")
		}
		w1.mu.Lock()
		if n := w1.renewed[stuck]; n != 0 {
			t.Errorf("the timed-out Attempt's Lease was renewed %d times, want 0", n)
		}
		w1.mu.Unlock()
		if j := stateOf(t, st, id); j.Attempt != 2 {
			t.Errorf("job at Attempt %d, want 2 (the re-run)", j.Attempt)
		}

		// The Worker is free again.
		next := insert(t, st, 1, 1)[0]
		waitFor(t, "w1 ran the next job", func() bool { return stateOf(t, st, next).State == job.StateSucceeded })
		stop(t, p1)
		if n := runs1.Load(); n != 2 {
			t.Errorf("w1 ran %d Attempts, want 2 (the stuck one and the next job)", n)
		}
	})
}

// detailOf returns the Failure Detail of the job's first Transition Log
// entry made via via.
func detailOf(t *testing.T, st *memstore.Store, id job.ID, via core.Via) string {
	t.Helper()
	log, err := st.JobTransitions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range log {
		if tr.Via == via {
			return tr.FailureDetail
		}
	}
	t.Fatalf("job %d has no %s entry in %v", id, via, log)
	return ""
}
