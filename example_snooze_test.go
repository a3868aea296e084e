package backwave_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave"
)

// FetchReport waits for a partner's nightly report to appear.
type FetchReport struct {
	Day string `json:"day"`
}

func (FetchReport) WireName() string { return "example.fetch_report" }

// errNotPublished stands for the partner's "not there yet" answer.
var errNotPublished = errors.New("report not published yet")

// A handler that returns Snooze says "not yet, try again in d": the job
// goes back to Scheduled due d later, and the Attempt is not charged
// against its attempt budget. Wrapping the Snooze keeps the reason in the
// Transition Log entry's detail.
func ExampleSnooze() {
	handler := func(ctx context.Context, j *backwave.Job[FetchReport]) error {
		if err := fetch(ctx, j.Args.Day); errors.Is(err, errNotPublished) {
			return fmt.Errorf("%s: %w: %w", j.Args.Day, err, backwave.Snooze(15*time.Minute))
		} else if err != nil {
			return err // a real failure: charged, retried by the retry policy
		}
		return nil
	}
	err := handler(context.Background(), &backwave.Job[FetchReport]{Args: FetchReport{Day: "2026-12-01"}})
	d, snoozed := backwave.SnoozeDelay(err)
	fmt.Println(snoozed, d)
	fmt.Println(err)
	// Output:
	// true 15m0s
	// 2026-12-01: report not published yet: backwave: snoozed for 15m0s
}

func fetch(context.Context, string) error { return errNotPublished }
