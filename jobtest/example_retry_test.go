package jobtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

// ChargeCard is a job whose handler fails twice, then succeeds.
type ChargeCard struct {
	Order string `json:"order"`
}

func (ChargeCard) WireName() string { return "example.charge_card" }

// A handler that fails its first two Attempts and succeeds on the third,
// run through the real retry policy on Virtual Time: the test sees each
// backoff in the Transition Log without waiting for any of it.
func TestExampleRetryTwiceThenSucceed(t *testing.T) {
	t.Parallel()
	handlers := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[ChargeCard]) error {
		if j.Attempt < 3 {
			return errors.New("card network unavailable")
		}
		return j.SetOutputJSON(map[string]string{"order": j.Args.Order, "status": "charged"})
	})
	if err != nil {
		t.Fatal(err)
	}
	c := jobtest.New(t, backwave.Config{
		Handlers: handlers,
		// No jitter, so the test can name each retry's instant.
		RetryPolicy: backwave.RetryPolicy{Initial: time.Minute, Max: time.Hour, Multiplier: 2},
	})
	start := c.Now()
	id, err := c.Enqueue(t.Context(), ChargeCard{Order: "A-1"})
	if err != nil {
		t.Fatal(err)
	}

	c.RunUntilIdle() // three Attempts, two backoffs: three minutes of Virtual Time

	jobtest.RequireState(t, c, id, backwave.StateSucceeded)
	jobtest.RequireOutput(t, c, id, []byte(`{"order":"A-1","status":"charged"}`))
	jobtest.RequireTransitions(t, c, id,
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert, Attempt: 0, At: start},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1, At: start},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaRetry, Attempt: 1, Detail: "card network unavailable"},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 2, At: start.Add(time.Minute)},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaRetry, Attempt: 2, Detail: "card network unavailable"},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 3, At: start.Add(3 * time.Minute)},
		jobtest.Step{State: backwave.StateSucceeded, Via: backwave.ViaSucceed, Attempt: 3, At: start.Add(3 * time.Minute)},
	)
}
