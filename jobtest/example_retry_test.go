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

// ChargeCard is a job whose handler fails twice, then succeeds.
type ChargeCard struct {
	Order string `json:"order"`
}

func (ChargeCard) WireName() string { return "charge_card" }

// A handler that fails its first two Attempts and succeeds on the third,
// run through the real retry policy on Virtual Time: the test sees every
// backoff in the Transition Log without waiting for any of it.
func TestRetryTwiceThenSucceed(t *testing.T) {
	t.Parallel()
	handlers := backwave.NewHandlers()
	calls := 0
	err := backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[ChargeCard]) error {
		calls++
		if j.Attempt < 3 {
			return errors.New("card network unavailable")
		}
		j.SetOutput([]byte(`{"charged":true}`))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := jobtest.New(t, backwave.Config{
		Handlers:    handlers,
		RetryPolicy: backwave.RetryPolicy{Initial: time.Minute, Max: time.Hour, Multiplier: 2},
	})
	start := c.Now()
	id, err := c.Enqueue(t.Context(), ChargeCard{Order: "A-1"})
	if err != nil {
		t.Fatal(err)
	}
	end := c.RunUntilIdle()

	jobtest.RequireState(t, c, id, backwave.StateSucceeded)
	jobtest.RequireOutput(t, c, id, []byte(`{"charged":true}`))
	jobtest.RequireTransitions(t, c, id,
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert, Attempt: 0, At: start},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1, At: start},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaRetry, Attempt: 1, Detail: "card network unavailable"},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 2},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaRetry, Attempt: 2, Detail: "card network unavailable"},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 3},
		jobtest.Step{State: backwave.StateSucceeded, Via: backwave.ViaSucceed, Attempt: 3},
	)
	fmt.Println(calls, end.Sub(start))
	d, _ := c.Admin("x")
	det, _ := d.Job(t.Context(), id)
	for _, tr := range det.Transitions { fmt.Println(tr.At.Sub(start), tr.State, tr.Via, tr.Attempt) }
}
