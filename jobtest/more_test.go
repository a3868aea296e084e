package jobtest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

type stepA struct{}
type stepB struct {
	From backwave.JobID `json:"from"`
}

func (stepA) WireName() string { return "jobtest.a" }
func (stepA) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: "a"}
}
func (stepB) WireName() string { return "jobtest.b" }
func (stepB) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: "b"}
}

// Work that crosses Worker Groups within one RunUntilIdle: a job in Queue a
// enqueues one in Queue b, served by another group's Pump.
func TestAcrossGroups(t *testing.T) {
	t.Parallel()
	h := backwave.NewHandlers()
	var c *jobtest.Client
	_ = backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[stepA]) error {
		_, err := c.Enqueue(ctx, stepB{From: j.ID}, backwave.WithDelay(time.Minute))
		return err
	})
	ranB := false
	_ = backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[stepB]) error {
		ranB = true
		return nil
	})
	c = jobtest.New(t, backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{
		backwave.DefaultWorkerGroup("ga", backwave.Strict("a")),
		backwave.DefaultWorkerGroup("gb", backwave.Strict("b")),
	}})
	start := c.Now()
	a, err := c.Enqueue(t.Context(), stepA{})
	if err != nil {
		t.Fatal(err)
	}
	end := c.RunUntilIdle()
	b := jobtest.RequireEnqueued(t, c, stepB{From: a})
	jobtest.RequireState(t, c, b.ID, backwave.StateSucceeded)
	if !ranB || end.Sub(start) != time.Minute {
		t.Fatalf("b ran %v, idle after %v; want true after 1m", ranB, end.Sub(start))
	}
	if info := jobtest.RequireState(t, c, b.ID, backwave.StateSucceeded); info.Worker != "" {
		t.Fatalf("a succeeded job still names worker %q", info.Worker)
	}
}

// Retention purges on Virtual Time: a succeeded job is gone once its keep
// horizon has passed, by the end of the Advance that passes it.
func TestRetention(t *testing.T) {
	t.Parallel()
	c := newClient(t, backwave.Config{
		Retention: &backwave.RetentionPolicy{KeepSucceeded: time.Hour, KeepDeadLettered: time.Hour},
	}, succeed)
	id := enqueue(t, c, 1)
	c.Advance(59 * time.Minute)
	jobtest.RequireState(t, c, id, backwave.StateSucceeded)
	c.Advance(time.Hour)
	if _, err := c.JobGet(t.Context(), id); !errors.Is(err, backwave.ErrNotFound) {
		t.Fatalf("JobGet after the keep horizon: %v, want ErrNotFound", err)
	}
}

// RunUntilIdle does not wait for a Recurring Schedule's next occurrence:
// only jobs count as work left.
func TestRunUntilIdleIgnoresSchedules(t *testing.T) {
	t.Parallel()
	h := backwave.NewHandlers()
	runs := 0
	_ = backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[tick]) error {
		runs++
		return nil
	})
	c := jobtest.New(t, backwave.Config{
		Handlers:  h,
		Schedules: []backwave.RecurringSchedule{{Name: "daily", Cron: "0 0 * * *", Args: tick{}}},
	})
	start := c.Now()
	if end := c.RunUntilIdle(); !end.Equal(start) || runs != 0 {
		t.Fatalf("RunUntilIdle ran %d jobs and stopped after %v; want none, at once", runs, end.Sub(start))
	}
	c.Advance(72 * time.Hour)
	if runs != 3 {
		t.Fatalf("three days ran %d daily jobs, want 3", runs)
	}
}

// A handler that ignores its attempt timeout keeps its Worker, but past the
// grace its Lease is no longer renewed: the Lease lapses, the expiry counts
// as a failed Attempt (Retry Cause lease expired), the job runs again, and
// the ignoring handler's late outcome is fenced out.
func TestTimeoutIgnoredLetsLeaseLapse(t *testing.T) {
	t.Parallel()
	var lateDone time.Time
	var c *jobtest.Client
	c = newClient(t, backwave.Config{AttemptTimeoutGrace: 10 * time.Second}, func(ctx context.Context, j *backwave.Job[work]) error {
		if j.Attempt == 1 {
			_ = jobtest.Sleep(context.WithoutCancel(ctx), 10*time.Minute) // ignores the timeout
			lateDone = c.Now()
			return nil
		}
		return nil
	}, backwave.WithAttemptTimeout(30*time.Second))
	start := c.Now()
	id := enqueue(t, c, 1)
	c.RunUntilIdle()

	info := jobtest.RequireState(t, c, id, backwave.StateSucceeded)
	if info.RetryCause != backwave.RetryCauseLeaseExpired {
		t.Fatalf("retry cause %v, want lease expired", info.RetryCause)
	}
	if got := lateDone.Sub(start); got != 10*time.Minute {
		t.Fatalf("the ignoring handler returned after %v, want 10m", got)
	}
	jobtest.RequireTransitions(t, c, id,
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1, At: start},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaExpire, Attempt: 1},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 2},
		jobtest.Step{State: backwave.StateSucceeded, Via: backwave.ViaSucceed, Attempt: 2},
	)
}

// Failure Detail and Job Output are bounded as in production: a long
// error is cut to Config.FailureDetailLimit, and output over
// Config.MaxOutputBytes fails the Attempt.
func TestDetailAndOutputLimits(t *testing.T) {
	t.Parallel()
	c := newClient(t, backwave.Config{FailureDetailLimit: 32, MaxOutputBytes: 4, MaxAttempts: 2}, func(ctx context.Context, j *backwave.Job[work]) error {
		if j.Attempt == 1 {
			return errors.New(strings.Repeat("x", 1000))
		}
		j.SetOutput([]byte("too long"))
		return nil
	})
	id := enqueue(t, c, 1)
	c.RunUntilIdle()
	jobtest.RequireState(t, c, id, backwave.StateDeadLettered)
	jobtest.RequireTransitions(t, c, id,
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaRetry, Attempt: 1, Detail: "xxx"},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 2},
		jobtest.Step{State: backwave.StateDeadLettered, Via: backwave.ViaDeadLetter, Attempt: 2, Detail: "job output of 8 by"}, // cut at 32 bytes too,
	)
	d, err := mustAdmin(t, c).Job(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d.Transitions[2].FailureDetail); n > 64 {
		t.Fatalf("Failure Detail of %d bytes under a limit of 32", n)
	}
	jobtest.RequireOutput(t, c, id, nil)
}
