package jobtest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

// A Client works inside a testing/synctest bubble. A handler's own timers
// (time.Sleep here) run on the bubble's fake clock, so they cost no real
// time either, while the Client's Virtual Time moves only with Advance,
// RunUntilIdle and jobtest.Sleep: the two clocks are separate.
func TestInsideSynctestBubble(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		bubbleStart := time.Now()
		var slept time.Duration
		c := newClient(t, backwave.Config{}, func(ctx context.Context, j *backwave.Job[work]) error {
			before := time.Now()
			time.Sleep(10 * time.Minute)                            // the bubble's clock
			if err := jobtest.Sleep(ctx, time.Minute); err != nil { // the Client's clock
				return err
			}
			slept = time.Since(before)
			return nil
		})
		start := c.Now()
		id := enqueue(t, c, 1)
		end := c.RunUntilIdle()

		jobtest.RequireState(t, c, id, backwave.StateSucceeded)
		if got := end.Sub(start); got != time.Minute {
			t.Fatalf("Virtual Time moved %v, want 1m (jobtest.Sleep only)", got)
		}
		if slept != 10*time.Minute || time.Since(bubbleStart) != 10*time.Minute {
			t.Fatalf("the bubble's clock moved %v in the handler and %v in all, want 10m each", slept, time.Since(bubbleStart))
		}
	})
}
