package jobtest_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

// work is a job whose handler the test supplies.
type work struct {
	N int `json:"n"`
}

func (work) WireName() string { return "jobtest.work" }

// newClient returns a Client running fn for every work job.
func newClient(t testing.TB, cfg backwave.Config, fn func(ctx context.Context, j *backwave.Job[work]) error, opts ...backwave.HandlerOption) *jobtest.Client {
	t.Helper()
	h := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(h, fn, opts...); err != nil {
		t.Fatalf("AddHandlerFunc: %v", err)
	}
	cfg.Handlers = h
	return jobtest.New(t, cfg)
}

func enqueue(t testing.TB, c *jobtest.Client, n int, opts ...backwave.EnqueueOption) backwave.JobID {
	t.Helper()
	id, err := c.Enqueue(context.Background(), work{N: n}, opts...)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return id
}

func succeed(context.Context, *backwave.Job[work]) error { return nil }

// A delayed job runs at its due time, to the nanosecond, and not before;
// nothing runs until the test moves Virtual Time (or calls Advance(0)).
func TestAdvanceRunsAtDueTime(t *testing.T) {
	t.Parallel()
	c := newClient(t, backwave.Config{}, succeed)
	start := c.Now()
	now := enqueue(t, c, 1)
	later := enqueue(t, c, 2, backwave.WithDelay(90*time.Second))
	jobtest.RequireState(t, c, now, backwave.StateScheduled)

	if got := c.Advance(0); !got.Equal(start) {
		t.Fatalf("Advance(0) moved the clock to %v", got)
	}
	jobtest.RequireState(t, c, now, backwave.StateSucceeded)
	c.Advance(90*time.Second - time.Nanosecond)
	jobtest.RequireState(t, c, later, backwave.StateScheduled)
	c.Advance(time.Nanosecond)
	jobtest.RequireState(t, c, later, backwave.StateSucceeded)
	jobtest.RequireTransitions(t, c, later,
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert, At: start},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1, At: start.Add(90 * time.Second)},
		jobtest.Step{State: backwave.StateSucceeded, Via: backwave.ViaSucceed, Attempt: 1, At: start.Add(90 * time.Second)},
	)
}

// A handler panic is a failed Attempt whose Failure Detail holds the panic
// value and the stack, as in production; the retry then succeeds.
func TestHandlerPanic(t *testing.T) {
	t.Parallel()
	c := newClient(t, backwave.Config{}, func(ctx context.Context, j *backwave.Job[work]) error {
		if j.Attempt == 1 {
			panic("boom")
		}
		return nil
	})
	id := enqueue(t, c, 1)
	c.RunUntilIdle()
	jobtest.RequireState(t, c, id, backwave.StateSucceeded)
	jobtest.RequireTransitions(t, c, id,
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaRetry, Attempt: 1, Detail: "panic: boom"},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 2},
		jobtest.Step{State: backwave.StateSucceeded, Via: backwave.ViaSucceed, Attempt: 2},
	)
	d, err := mustAdmin(t, c).Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if detail := d.Transitions[2].FailureDetail; !strings.Contains(detail, "goroutine ") {
		t.Fatalf("panic Failure Detail carries no stack: %q", detail)
	}
}

func mustAdmin(t *testing.T, c *jobtest.Client) *backwave.Admin {
	t.Helper()
	a, err := c.Admin("test")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The attempt budget and Dead-Lettering are the real ones.
func TestDeadLetter(t *testing.T) {
	t.Parallel()
	c := newClient(t, backwave.Config{MaxAttempts: 3}, func(context.Context, *backwave.Job[work]) error {
		return errors.New("always")
	})
	id := enqueue(t, c, 1)
	c.RunUntilIdle()
	info := jobtest.RequireState(t, c, id, backwave.StateDeadLettered)
	if info.Attempt != 3 || info.RetryCause != backwave.RetryCauseHandlerFailed {
		t.Fatalf("dead-lettered at attempt %d with retry cause %v", info.Attempt, info.RetryCause)
	}
}

// A handler parked in Sleep keeps its Lease: heartbeats renew it on
// Virtual Time, so a five-minute Attempt under a one-minute Lease succeeds
// without an expiry.
func TestSleepRenewsLease(t *testing.T) {
	t.Parallel()
	c := newClient(t, backwave.Config{}, func(ctx context.Context, j *backwave.Job[work]) error {
		return jobtest.Sleep(ctx, 5*time.Minute)
	})
	start := c.Now()
	id := enqueue(t, c, 1)
	c.Advance(4 * time.Minute)
	info := jobtest.RequireState(t, c, id, backwave.StateRunning)
	if !info.LeaseExpiresAt.After(c.Now()) {
		t.Fatalf("lease expires at %v, not after now %v: not renewed", info.LeaseExpiresAt, c.Now())
	}
	c.RunUntilIdle()
	jobtest.RequireTransitions(t, c, id,
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1, At: start},
		jobtest.Step{State: backwave.StateSucceeded, Via: backwave.ViaSucceed, Attempt: 1, At: start.Add(5 * time.Minute)},
	)
}

// Attempts parked in Sleep overlap in Virtual Time: while one waits,
// others run.
func TestSleepOverlaps(t *testing.T) {
	t.Parallel()
	var order []int
	c := newClient(t, backwave.Config{}, func(ctx context.Context, j *backwave.Job[work]) error {
		if err := jobtest.Sleep(ctx, time.Duration(j.Args.N)*time.Second); err != nil {
			return err
		}
		order = append(order, j.Args.N)
		return nil
	})
	start := c.Now()
	for _, n := range []int{30, 10, 20} {
		enqueue(t, c, n)
	}
	end := c.RunUntilIdle()
	if len(order) != 3 || order[0] != 10 || order[1] != 20 || order[2] != 30 {
		t.Fatalf("finished in order %v, want [10 20 30]", order)
	}
	if got := end.Sub(start); got != 30*time.Second {
		t.Fatalf("idle after %v, want 30s: the Attempts did not overlap", got)
	}
}

// An operator cancel reaches a parked handler at the next heartbeat, with
// cause ErrCancelRequested, and the job ends Cancelled.
func TestCancelRequest(t *testing.T) {
	t.Parallel()
	var cause error
	c := newClient(t, backwave.Config{}, func(ctx context.Context, j *backwave.Job[work]) error {
		err := jobtest.Sleep(ctx, time.Hour)
		cause = context.Cause(ctx)
		return err
	})
	id := enqueue(t, c, 1)
	c.Advance(time.Second)
	if _, err := mustAdmin(t, c).Cancel(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	c.RunUntilIdle()
	jobtest.RequireState(t, c, id, backwave.StateCancelled)
	if !errors.Is(cause, backwave.ErrCancelRequested) {
		t.Fatalf("handler's context ended with %v, want ErrCancelRequested", cause)
	}
}

// Close cancels a parked handler with ErrShutdown, waits for it to return
// and relinquishes its Lease; goleak (TestMain) checks that nothing is left.
func TestCloseEndsParkedHandler(t *testing.T) {
	t.Parallel()
	var cause error
	returned := false
	c := newClient(t, backwave.Config{}, func(ctx context.Context, j *backwave.Job[work]) error {
		err := jobtest.Sleep(ctx, time.Hour)
		cause, returned = context.Cause(ctx), true
		return err
	})
	id := enqueue(t, c, 1)
	c.Advance(time.Minute)
	jobtest.RequireState(t, c, id, backwave.StateRunning)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !returned || !errors.Is(cause, backwave.ErrShutdown) {
		t.Fatalf("after Close the handler returned %v with cause %v, want ErrShutdown", returned, cause)
	}
	info, err := c.JobGet(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != backwave.StateScheduled {
		t.Fatalf("after Close the job is %s, want scheduled (relinquished)", info.State)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Misuse fails the test with a message, never a panic.
func TestMisuseFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body func(tb testing.TB)
		fail string
	}{
		{"negative advance", func(tb testing.TB) { newClient(tb, backwave.Config{}, succeed).Advance(-time.Second) }, "never moves backwards"},
		{"advance to the past", func(tb testing.TB) {
			c := newClient(tb, backwave.Config{}, succeed)
			c.AdvanceTo(c.Now().Add(-time.Nanosecond))
		}, "before now"},
		{"clock", func(tb testing.TB) { jobtest.New(tb, backwave.Config{Clock: backwave.WallClock{}}) }, "leave it nil"},
		{"bad config", func(tb testing.TB) { newClient(tb, backwave.Config{MaxAttempts: -1}, succeed) }, "MaxAttempts -1"},
		{"closed", func(tb testing.TB) {
			c := newClient(tb, backwave.Config{}, succeed)
			_ = c.Close()
			c.RunUntilIdle()
		}, "the Client is closed"},
		{"handler exits", func(tb testing.TB) {
			c := newClient(tb, backwave.Config{}, func(context.Context, *backwave.Job[work]) error {
				runtime.Goexit()
				return nil
			})
			enqueue(tb, c, 1)
			c.RunUntilIdle()
		}, "exited without returning"},
		{"idle limit", func(tb testing.TB) { jobtest.New(tb, backwave.Config{}, jobtest.IdleLimit(0)) }, "IdleLimit(0)"},
		{"never idle", func(tb testing.TB) {
			h := backwave.NewHandlers()
			var c *jobtest.Client
			_ = backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[work]) error {
				_, err := c.Enqueue(ctx, work{N: j.Args.N + 1}, backwave.WithDelay(time.Hour))
				return err
			})
			c = jobtest.New(tb, backwave.Config{Handlers: h}, jobtest.IdleLimit(100))
			enqueue(tb, c, 1)
			c.RunUntilIdle()
		}, "still not idle after visiting 100 instants"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fatal, errs := runFake(tt.body)
			if !strings.Contains(fatal, tt.fail) {
				t.Fatalf("failed with %q, want it to contain %q", fatal, tt.fail)
			}
			if len(errs) > 0 {
				t.Fatalf("cleanup reported %q", errs)
			}
		})
	}
}

// Start is refused: the Pumps belong to the jobtest Client.
func TestStartRefused(t *testing.T) {
	t.Parallel()
	c := newClient(t, backwave.Config{}, succeed)
	if err := c.Start(t.Context()); err == nil {
		t.Fatal("Start on a jobtest Client succeeded")
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// The same test gives the same history, instant for instant.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	run := func() []backwave.Transition {
		c := newClient(t, backwave.Config{}, func(ctx context.Context, j *backwave.Job[work]) error {
			if j.Attempt < 4 {
				return errors.New("again")
			}
			return jobtest.Sleep(ctx, time.Duration(j.Args.N)*time.Second)
		})
		var ids []backwave.JobID
		for n := range 5 {
			ids = append(ids, enqueue(t, c, n))
		}
		c.RunUntilIdle()
		var all []backwave.Transition
		for _, id := range ids {
			d, err := mustAdmin(t, c).Job(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, d.Transitions...)
		}
		return all
	}
	a, b := run(), run()
	if len(a) != len(b) {
		t.Fatalf("two runs logged %d and %d transitions", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("transition %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
}
