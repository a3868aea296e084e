package shell_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// The tests run inside testing/synctest bubbles: the memstore's clock is the
// WallClock, which reads the bubble's fake time, so Leases, drain periods and
// tickers play out instantly and deterministically.

const queue = "q"

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func newStore() *memstore.Store { return memstore.New(memstore.Options{Clock: shell.WallClock{}}) }

// newPump builds a Pump over st serving queue; adjust tweaks the config.
func newPump(t *testing.T, st store.Worker, exec shell.Executor, adjust func(*shell.Config)) *shell.Pump {
	t.Helper()
	cfg := shell.Config{
		Driver: node.Config{
			Worker:        "w1",
			Policy:        node.Strict(queue),
			PoolSize:      4,
			LeaseDuration: 30 * time.Second,
			RetryPolicy:   core.RetryPolicy{Initial: time.Second, Max: time.Second, Multiplier: 1},
		},
		Store:    st,
		Executor: exec,
		Pacing:   node.Pacing{PollInterval: 100 * time.Millisecond, DrainTimeout: 5 * time.Second},
		Logger:   testLogger(t),
	}
	if hs, ok := st.(store.HintSource); ok {
		cfg.Hints = hs
	}
	if adjust != nil {
		adjust(&cfg)
	}
	p, err := shell.New(cfg)
	if err != nil {
		t.Fatalf("shell.New: %v", err)
	}
	return p
}

func insert(t *testing.T, st store.Inserter, n, maxAttempts int) []job.ID {
	t.Helper()
	jobs := make([]store.NewJob, n)
	for i := range jobs {
		jobs[i] = store.NewJob{WireName: "w", Queue: queue, Payload: []byte("{}"), MaxAttempts: maxAttempts}
	}
	ids, err := st.JobInsertMany(context.Background(), store.InsertManyParams{Jobs: jobs})
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	return ids
}

// waitFor steps the bubble's fake time until cond holds, failing after a
// fake minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func stateOf(t *testing.T, st store.Monitor, id job.ID) job.Job {
	t.Helper()
	j, err := st.JobGet(context.Background(), id)
	if err != nil {
		t.Fatalf("JobGet(%d): %v", id, err)
	}
	return j
}

func start(t *testing.T, p *shell.Pump) {
	t.Helper()
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	// A failed test still stops the loop, so the bubble can end.
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
}

func stop(t *testing.T, p *shell.Pump) {
	t.Helper()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func succeed(context.Context, job.Job) shell.Result {
	return shell.Result{Result: core.ResultSucceeded}
}

func TestPumpRunsJobsToSucceeded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		ids := insert(t, st, 50, 1)
		var runs atomic.Int32
		p := newPump(t, st, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			runs.Add(1)
			return shell.Result{Result: core.ResultSucceeded, Output: []byte(j.ID.String()), TagDelta: []job.Tag{job.Label("done")}}
		}), nil)
		start(t, p)
		waitFor(t, "all jobs succeeded", func() bool {
			n, _ := st.JobCountByState(context.Background(), store.CountParams{})
			return n[job.StateSucceeded] == len(ids)
		})
		stop(t, p)
		if got := runs.Load(); got != int32(len(ids)) {
			t.Errorf("handler ran %d times, want %d", got, len(ids))
		}
		j := stateOf(t, st, ids[7])
		if out, _ := st.JobOutput(context.Background(), j.ID); string(out) != j.ID.String() {
			t.Errorf("Job Output = %q, want %q", out, j.ID.String())
		}
		if len(j.Tags) != 1 || j.Tags[0] != job.Label("done") {
			t.Errorf("tags = %v, want the Tag delta [done]", j.Tags)
		}
	})
}

// Handler goroutines are kept for the next Attempt: 200 jobs through a pool
// of 4 run on a handful of goroutines, not one new goroutine per job.
func TestPumpReusesHandlerGoroutines(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		const jobs = 200
		insert(t, st, jobs, 1)
		var mu sync.Mutex
		seen := make(map[string]bool)
		p := newPump(t, st, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			buf := make([]byte, 64)
			id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf, false)]), "goroutine "), " ")
			mu.Lock()
			seen[id] = true
			mu.Unlock()
			return shell.Result{Result: core.ResultSucceeded}
		}), nil)
		start(t, p)
		waitFor(t, "all jobs succeeded", func() bool {
			n, _ := st.JobCountByState(context.Background(), store.CountParams{})
			return n[job.StateSucceeded] == jobs
		})
		stop(t, p)
		mu.Lock()
		defer mu.Unlock()
		if len(seen) > 4*4 {
			t.Errorf("%d jobs ran on %d goroutines with a pool of 4; want the goroutines reused", jobs, len(seen))
		}
	})
}

// Idle handler goroutines are retired on heartbeat ticks once no recent
// moment needed them: after a burst of 50 concurrent Attempts and a quiet
// minute (several heartbeats), no handler goroutine is left.
// Not parallel: it counts goroutines by their stacks, process-wide.
func TestPumpIdleHandlerGoroutinesExit(t *testing.T) {
	handlers := func() int {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "shell.(*Pump).handle(")
	}
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		insert(t, st, 50, 1)
		p := newPump(t, st, shell.ExecutorFunc(succeed), func(c *shell.Config) { c.Driver.PoolSize = 50 })
		start(t, p)
		waitFor(t, "all jobs succeeded", func() bool {
			n, _ := st.JobCountByState(context.Background(), store.CountParams{})
			return n[job.StateSucceeded] == 50
		})
		if n := handlers(); n == 0 {
			t.Fatalf("no handler goroutine right after a burst of 50; want them waiting for the next Attempt")
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := handlers(); n != 0 {
			t.Errorf("%d handler goroutines after a quiet minute; want the idle ones gone", n)
		}
		stop(t, p)
	})
}

// A recovered panic is a failed Attempt whose Failure Detail carries the
// panic value and the stack (glossary: Failure Detail).
func TestPumpPanicIsFailedAttemptWithStack(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		id := insert(t, st, 1, 1)[0]
		p := newPump(t, st, shell.ExecutorFunc(func(context.Context, job.Job) shell.Result {
			panicky()
			return shell.Result{}
		}), nil)
		start(t, p)
		waitFor(t, "dead-lettered", func() bool { return stateOf(t, st, id).State == job.StateDeadLettered })
		stop(t, p)
		detail := lastDetail(t, st, id)
		for _, want := range []string{"panic: kaboom", "goroutine", "panicky"} {
			if !strings.Contains(detail, want) {
				t.Errorf("Failure Detail lacks %q:\n%s", want, detail)
			}
		}
	})
}

func panicky() { panic("kaboom") }

func lastDetail(t *testing.T, st *memstore.Store, id job.ID) string {
	t.Helper()
	log, err := st.JobTransitions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return log[len(log)-1].FailureDetail
}

func TestPumpFailureDetailBoundedAndOff(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 100) // 200 bytes
	for _, tc := range []struct {
		name string
		cfg  func(*shell.Config)
		want string
	}{
		{"limit", func(c *shell.Config) { c.FailureDetailLimit = 51 }, shell.TruncateDetail(long, 51)},
		{"off", func(c *shell.Config) { c.FailureDetailOff = true }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				st := newStore()
				id := insert(t, st, 1, 1)[0]
				p := newPump(t, st, shell.ExecutorFunc(func(context.Context, job.Job) shell.Result {
					return shell.Result{Result: core.ResultFailed, FailureDetail: long}
				}), tc.cfg)
				start(t, p)
				waitFor(t, "dead-lettered", func() bool { return stateOf(t, st, id).State == job.StateDeadLettered })
				stop(t, p)
				if got := lastDetail(t, st, id); got != tc.want {
					t.Errorf("Failure Detail = %q, want %q", got, tc.want)
				}
			})
		})
	}
}

// An operator cancel reaches the handler's context with ErrCancelRequested as
// its cause, and a handler that then fails ends the job Cancelled.
func TestPumpCancelRequestReachesHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		id := insert(t, st, 1, 5)[0]
		running := make(chan struct{})
		cause := make(chan error, 1)
		p := newPump(t, st, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			close(running)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return shell.Result{Result: core.ResultFailed, FailureDetail: context.Cause(ctx).Error()}
		}), nil)
		start(t, p)
		<-running
		if err := st.RequestCancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if err := <-cause; !errors.Is(err, shell.ErrCancelRequested) {
			t.Errorf("cause = %v, want ErrCancelRequested", err)
		}
		waitFor(t, "cancelled", func() bool { return stateOf(t, st, id).State == job.StateCancelled })
		stop(t, p)
	})
}

// Graceful Stop: a handler that ignores its context is abandoned when the
// drain period runs out and its Lease relinquished: the job is Scheduled at
// once with its Attempt kept (glossary: Relinquish).
func TestPumpStopRelinquishesHangingHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		id := insert(t, st, 1, 5)[0]
		running, release := make(chan struct{}), make(chan struct{})
		var cause atomic.Value
		p := newPump(t, st, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			close(running)
			<-release // hangs, deaf to ctx
			cause.Store(context.Cause(ctx))
			return shell.Result{Result: core.ResultSucceeded}
		}), nil)
		start(t, p)
		<-running
		began := time.Now()
		stop(t, p)
		if took := time.Since(began); took < 5*time.Second || took > 6*time.Second {
			t.Errorf("Stop took %v, want the 5s drain timeout", took)
		}
		j := stateOf(t, st, id)
		if j.State != job.StateScheduled || j.Attempt != 1 || j.RetryCause != job.RetryCauseNone {
			t.Errorf("after Stop: state %s attempt %d cause %q; want scheduled, attempt 1, no Retry Cause", j.State, j.Attempt, j.RetryCause)
		}
		close(release)
		synctest.Wait()
		if err, _ := cause.Load().(error); !errors.Is(err, shell.ErrShutdown) {
			t.Errorf("handler's cause = %v, want ErrShutdown", err)
		}
		if got := stateOf(t, st, id); got.State != job.StateScheduled {
			t.Errorf("the abandoned handler's late result changed the job: %s", got.State)
		}
	})
}

// refusingRelinquish is a store whose LeaseRelinquish fails.
type refusingRelinquish struct {
	*memstore.Store
	err error
}

func (r refusingRelinquish) LeaseRelinquish(context.Context, store.RelinquishParams) (store.RelinquishResult, error) {
	return store.RelinquishResult{}, r.err
}

// Graceful Stop that could not hand back the Leases says so: Stop returns an
// error wrapping the store's, and the job keeps its Lease, to lapse.
func TestPumpStopReportsFailedRelinquish(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		id := insert(t, st, 1, 5)[0]
		refused := errors.New("the database is gone")
		running, release := make(chan struct{}), make(chan struct{})
		p := newPump(t, refusingRelinquish{st, refused}, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			close(running)
			<-release // hangs, deaf to ctx
			return shell.Result{Result: core.ResultSucceeded}
		}), nil)
		start(t, p)
		<-running
		err := p.Stop(context.Background())
		if !errors.Is(err, refused) {
			t.Errorf("Stop = %v, want an error wrapping the store's %q", err, refused)
		}
		if j := stateOf(t, st, id); j.State != job.StateRunning {
			t.Errorf("after a refused hand-back the job is %s, want still running (its Lease to lapse)", j.State)
		}
		close(release)
		synctest.Wait()
	})
}

// Stop with handlers that finish within the drain period reports their
// outcomes and returns as soon as the Driver is drained.
func TestPumpStopDrainsRunningHandlers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		ids := insert(t, st, 3, 5)
		var started sync.WaitGroup
		started.Add(len(ids))
		p := newPump(t, st, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			started.Done()
			time.Sleep(time.Second)
			return shell.Result{Result: core.ResultSucceeded}
		}), nil)
		start(t, p)
		started.Wait()
		began := time.Now()
		stop(t, p)
		if took := time.Since(began); took != time.Second {
			t.Errorf("Stop took %v, want 1s (the handlers' run time)", took)
		}
		for _, id := range ids {
			if s := stateOf(t, st, id).State; s != job.StateSucceeded {
				t.Errorf("job %d is %s, want succeeded", id, s)
			}
		}
	})
}

// A Wake-Up Hint is an earlier poll: with a poll interval of an hour, a job
// inserted after the first poll still starts at once.
func TestPumpHintStartsJobBeforePollInterval(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		ran := make(chan struct{})
		p := newPump(t, st, shell.ExecutorFunc(func(context.Context, job.Job) shell.Result {
			close(ran)
			return shell.Result{Result: core.ResultSucceeded}
		}), func(c *shell.Config) {
			c.PollInterval = time.Hour
			c.Driver.MaintenanceInterval = time.Hour
		})
		start(t, p)
		synctest.Wait() // the first poll is done; the loop waits
		insert(t, st, 1, 1)
		select {
		case <-ran:
		case <-time.After(time.Minute):
			t.Fatal("the job did not start within a minute: the hint was lost")
		}
		stop(t, p)
	})
}

// flakyReport fails the first OutcomeReport; the Driver reports the outcome
// again and the Shell must still have its Failure Detail.
type flakyReport struct {
	*memstore.Store
	failed atomic.Bool
}

func (f *flakyReport) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	if f.failed.CompareAndSwap(false, true) {
		return nil, errors.New("connection reset")
	}
	return f.Store.OutcomeReport(ctx, p)
}

func TestPumpKeepsDetailAcrossFailedReport(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &flakyReport{Store: newStore()}
		id := insert(t, st, 1, 1)[0]
		p := newPump(t, st, shell.ExecutorFunc(func(context.Context, job.Job) shell.Result {
			return shell.Result{Result: core.ResultFailed, FailureDetail: "disk full"}
		}), nil)
		start(t, p)
		waitFor(t, "dead-lettered", func() bool { return stateOf(t, st, id).State == job.StateDeadLettered })
		stop(t, p)
		if !st.failed.Load() {
			t.Fatal("the report never failed")
		}
		if got := lastDetail(t, st.Store, id); got != "disk full" {
			t.Errorf("Failure Detail = %q, want %q", got, "disk full")
		}
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	base := func() shell.Config {
		return shell.Config{
			Driver:   node.Config{Worker: "w", Policy: node.Strict(queue)},
			Store:    newStore(),
			Executor: shell.ExecutorFunc(succeed),
		}
	}
	for name, mutate := range map[string]func(*shell.Config){
		"no store":      func(c *shell.Config) { c.Store = nil },
		"no executor":   func(c *shell.Config) { c.Executor = nil },
		"no worker id":  func(c *shell.Config) { c.Driver.Worker = "" },
		"negative poll": func(c *shell.Config) { c.PollInterval = -time.Second },
		"heartbeat at lease": func(c *shell.Config) {
			c.Driver.LeaseDuration = time.Minute
			c.HeartbeatInterval = time.Minute
		},
		"negative detail limit":  func(c *shell.Config) { c.FailureDetailLimit = -1 },
		"negative drain timeout": func(c *shell.Config) { c.DrainTimeout = -1 },
	} {
		cfg := base()
		mutate(&cfg)
		if _, err := shell.New(cfg); !errors.Is(err, shell.ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := shell.New(base()); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// partitioned fails every LeaseRenew while cut is set.
type partitioned struct {
	*memstore.Store
	cut atomic.Bool
}

func (p *partitioned) LeaseRenew(ctx context.Context, r store.RenewParams) ([]store.RenewResult, error) {
	if p.cut.Load() {
		return nil, errors.New("network partition")
	}
	return p.Store.LeaseRenew(ctx, r)
}

// A Lease lost while the node could not renew is abandoned as soon as the
// node learns of it (a renewal answered lost, or its own re-claim of the
// job): the handler's context is cancelled with ErrLeaseLost and its result
// is dropped (node-driver.txt, "The lease and heartbeat state machine").
func TestPumpAbandonsLostLease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &partitioned{Store: newStore()}
		st.cut.Store(true)
		id := insert(t, st, 1, 5)[0]
		running := make(chan struct{})
		cause := make(chan error, 1)
		p := newPump(t, st, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			if j.Attempt > 1 {
				return shell.Result{Result: core.ResultSucceeded}
			}
			close(running)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return shell.Result{Result: core.ResultFailed}
		}), func(c *shell.Config) {
			c.Driver.MaintenanceInterval = time.Hour // the test expires the Lease itself
		})
		start(t, p)
		<-running
		time.Sleep(31 * time.Second) // past the 30s Lease: renewals failed meanwhile
		res, err := st.LeaseExpire(context.Background(), store.ExpireParams{Queues: []string{queue}})
		if err != nil || len(res.Expired) != 1 {
			t.Fatalf("LeaseExpire: %v, %v", res, err)
		}
		st.cut.Store(false)
		if err := <-cause; !errors.Is(err, shell.ErrLeaseLost) {
			t.Errorf("cause = %v, want ErrLeaseLost", err)
		}
		waitFor(t, "second Attempt succeeded", func() bool { return stateOf(t, st, id).State == job.StateSucceeded })
		if j := stateOf(t, st, id); j.Attempt != 2 {
			t.Errorf("Attempt = %d, want 2", j.Attempt)
		}
		stop(t, p)
	})
}

// countingReports counts the OutcomeReport calls made to its store.
type countingReports struct {
	*memstore.Store
	reports atomic.Int64
}

func (c *countingReports) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	c.reports.Add(1)
	return c.Store.OutcomeReport(ctx, p)
}

// Attempts that finish together during a drain are reported together: the
// outcomes of a burst are one report, not one store round trip each (with
// a Pool of 1,000 a Stop would otherwise make 1,000 sequential reports).
func TestPumpStopCoalescesOutcomes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &countingReports{Store: newStore()}
		const n = 50
		ids := insert(t, st, n, 5)
		var started sync.WaitGroup
		started.Add(n)
		release := make(chan struct{})
		p := newPump(t, st, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			started.Done()
			<-release
			return shell.Result{Result: core.ResultSucceeded}
		}), func(c *shell.Config) { c.Driver.PoolSize = n })
		start(t, p)
		started.Wait()
		stopped := make(chan error, 1)
		go func() { stopped <- p.Stop(context.Background()) }()
		synctest.Wait() // Stop has reached the loop
		before := st.reports.Load()
		close(release)
		if err := <-stopped; err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if got := st.reports.Load() - before; got > 3 {
			t.Errorf("the drain reported %d outcomes in %d reports, want them coalesced (at most 3)", n, got)
		}
		for _, id := range ids {
			if s := stateOf(t, st, id).State; s != job.StateSucceeded {
				t.Errorf("job %d is %s, want succeeded", id, s)
			}
		}
	})
}
