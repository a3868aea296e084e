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

// FetchRates calls a rates service that sometimes hangs.
type FetchRates struct{}

func (FetchRates) WireName() string { return "example.fetch_rates" }

// ratesAPI is the test's fake of the service: it takes as long as the
// test says, in Virtual Time (jobtest.Sleep), and gives up when the
// handler's context is cancelled, as a real client would.
type ratesAPI struct {
	delays []time.Duration // per call
	calls  int
}

func (a *ratesAPI) Fetch(ctx context.Context) (string, error) {
	d := a.delays[min(a.calls, len(a.delays)-1)]
	a.calls++
	if err := jobtest.Sleep(ctx, d); err != nil {
		return "", fmt.Errorf("rates service: %w", err)
	}
	return "EUR=1.08", nil
}

// A handler bounded by WithAttemptTimeout: the first call hangs for ten
// minutes, the timeout cancels it after thirty seconds (its context's cause
// is backwave.ErrAttemptTimeout) and the Attempt fails with Failure Detail
// naming the timeout; the retry's call answers in two seconds.
func TestExampleAttemptTimeout(t *testing.T) {
	t.Parallel()
	api := &ratesAPI{delays: []time.Duration{10 * time.Minute, 2 * time.Second}}
	var causes []error
	handlers := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[FetchRates]) error {
		rates, err := api.Fetch(ctx)
		if err != nil {
			causes = append(causes, context.Cause(ctx))
			return err
		}
		j.SetOutput([]byte(rates))
		return nil
	}, backwave.WithAttemptTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c := jobtest.New(t, backwave.Config{
		Handlers:    handlers,
		RetryPolicy: backwave.RetryPolicy{Initial: time.Minute, Max: time.Minute, Multiplier: 1},
	})
	start := c.Now()
	id, err := c.Enqueue(t.Context(), FetchRates{})
	if err != nil {
		t.Fatal(err)
	}

	c.RunUntilIdle()

	jobtest.RequireState(t, c, id, backwave.StateSucceeded)
	jobtest.RequireOutput(t, c, id, []byte("EUR=1.08"))
	if len(causes) != 1 || !errors.Is(causes[0], backwave.ErrAttemptTimeout) {
		t.Fatalf("the hanging Attempt's context ended with %v, want ErrAttemptTimeout", causes)
	}
	retryAt := start.Add(30*time.Second + time.Minute)
	jobtest.RequireTransitions(t, c, id,
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert, At: start},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1, At: start},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaRetry, Attempt: 1, At: start.Add(30 * time.Second),
			Detail: "the Attempt ran past its 30s timeout: rates service: backwave: attempt timeout"},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 2, At: retryAt},
		jobtest.Step{State: backwave.StateSucceeded, Via: backwave.ViaSucceed, Attempt: 2, At: retryAt.Add(2 * time.Second)},
	)
}
