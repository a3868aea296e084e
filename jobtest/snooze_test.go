package jobtest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

// Snooze on Virtual Time (docs/job-shapes.md, Snooze): a handler that
// snoozes twice and then succeeds runs three times, each snooze due the
// delay later, and its budget of one Attempt is not spent by the snoozes.
func TestSnoozeNotCharged(t *testing.T) {
	t.Parallel()
	runs := 0
	c := newClient(t, backwave.Config{MaxAttempts: 1}, func(context.Context, *backwave.Job[work]) error {
		runs++
		if runs <= 2 {
			return backwave.Snooze(5 * time.Minute)
		}
		return nil
	})
	start := c.Now()
	id := enqueue(t, c, 1)
	c.RunUntilIdle()
	info := jobtest.RequireState(t, c, id, backwave.StateSucceeded)
	jobtest.RequireSnoozed(t, c, id, 2)
	if runs != 3 || info.Attempt != 3 || info.Ceiling != 3 {
		t.Fatalf("runs %d, Attempt %d, ceiling %d; want 3, 3, 3", runs, info.Attempt, info.Ceiling)
	}
	if got := info.FinalizedAt.Sub(start); got < 10*time.Minute {
		t.Fatalf("succeeded %v after enqueue, want at least two 5m snoozes", got)
	}
	jobtest.RequireTransitions(t, c, id,
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaSnooze, Attempt: 1, Detail: "snoozed for 5m0s"},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 2},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaSnooze, Attempt: 2},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 3},
		jobtest.Step{State: backwave.StateSucceeded, Via: backwave.ViaSucceed, Attempt: 3},
	)
}

// The cap: a handler that always snoozes gets its free snoozes, then each
// snooze is charged like a failure, and the job dead-letters after
// SnoozeCap + MaxAttempts runs: it cannot loop forever.
func TestSnoozeCap(t *testing.T) {
	t.Parallel()
	runs := 0
	c := newClient(t, backwave.Config{MaxAttempts: 2, SnoozeCap: 3}, func(context.Context, *backwave.Job[work]) error {
		runs++
		return fmt.Errorf("waiting for the file: %w", backwave.Snooze(time.Minute))
	})
	id := enqueue(t, c, 1)
	c.RunUntilIdle()
	info := jobtest.RequireState(t, c, id, backwave.StateDeadLettered)
	jobtest.RequireSnoozed(t, c, id, 3)
	if runs != 5 || info.RetryCause != backwave.RetryCauseHandlerFailed {
		t.Fatalf("runs %d, Retry Cause %v; want 5, handler failed", runs, info.RetryCause)
	}
}

// A Wire Name's own cap (WithSnoozeCap) replaces the Client's; 0 gives no
// free snooze.
func TestSnoozeCapPerWireName(t *testing.T) {
	t.Parallel()
	c := newClient(t, backwave.Config{MaxAttempts: 1}, func(context.Context, *backwave.Job[work]) error {
		return backwave.Snooze(time.Minute)
	}, backwave.WithSnoozeCap(0))
	id := enqueue(t, c, 1)
	c.RunUntilIdle()
	jobtest.RequireState(t, c, id, backwave.StateDeadLettered)
	jobtest.RequireSnoozed(t, c, id, 0)
}

// Bad input: a negative snooze, or one past MaxSnoozeDelay, fails the
// Attempt with Failure Detail naming it; it is never taken as "now".
func TestSnoozeBadDelay(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{-time.Second, backwave.MaxSnoozeDelay + time.Hour} {
		c := newClient(t, backwave.Config{MaxAttempts: 1}, func(context.Context, *backwave.Job[work]) error {
			return backwave.Snooze(d)
		})
		id := enqueue(t, c, 1)
		c.RunUntilIdle()
		jobtest.RequireState(t, c, id, backwave.StateDeadLettered)
		jobtest.RequireSnoozed(t, c, id, 0)
		jobtest.RequireTransitions(t, c, id,
			jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert},
			jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1},
			jobtest.Step{State: backwave.StateDeadLettered, Via: backwave.ViaDeadLetter, Attempt: 1, Detail: "invalid snooze"},
		)
	}
}

// SnoozeDelay finds a Snooze through wrapping; other errors are none.
func TestSnoozeDelay(t *testing.T) {
	t.Parallel()
	if d, ok := backwave.SnoozeDelay(fmt.Errorf("x: %w", backwave.Snooze(time.Second))); !ok || d != time.Second {
		t.Fatalf("SnoozeDelay(wrapped) = %v, %v", d, ok)
	}
	if _, ok := backwave.SnoozeDelay(errors.New("x")); ok {
		t.Fatal("SnoozeDelay(plain error) found a snooze")
	}
}
