package backwave_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// NightlyReport is the job a Recurring Schedule mints.
type NightlyReport struct{}

func (NightlyReport) WireName() string { return "nightly_report" }

// Declare Recurring Schedules in code: they are stored at Start, and every
// Client running Worker Groups mints their jobs on its maintenance beat. A
// zone with daylight saving is read the way cron users expect: 02:30 on the
// day New York skips it runs once, right after the gap.
func ExampleRecurringSchedule() {
	ctx := context.Background()
	// The In-Memory Store on Virtual Time, standing at 2000-01-01 UTC. The
	// Client follows the store's clock (Config.Clock is nil), so schedules
	// mint, and delays run out, only as that clock is advanced.
	st := memstore.New(memstore.Options{})
	client, err := backwave.NewClient(st, backwave.Config{
		Schedules: []backwave.RecurringSchedule{{
			Name:      "nightly-report",
			Cron:      "30 2 * * *",
			Zone:      "America/New_York",
			Args:      NightlyReport{},
			Options:   []backwave.EnqueueOption{backwave.WithQueue("reports")},
			CatchUp:   backwave.CatchUpCoalesce, // one make-up job after an outage
			NoOverlap: true,                     // never two reports at once
		}},
		Retention: &backwave.RetentionPolicy{KeepSucceeded: 7 * 24 * time.Hour, KeepDeadLettered: 30 * 24 * time.Hour},
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil { // registers the schedule
		panic(err)
	}
	defer client.Stop(ctx)

	admin, err := client.Admin("ops:example")
	if err != nil {
		panic(err)
	}
	list, err := admin.Schedules(ctx)
	if err != nil {
		panic(err)
	}
	for _, s := range list {
		fmt.Printf("%s %q in %s → queue %s, next %s\n", s.Name, s.Cron, s.Zone, s.Queue, s.Next.Format(time.RFC3339))
	}

	// A malformed expression is refused, naming the field.
	err = client.RegisterSchedule(ctx, backwave.RecurringSchedule{Name: "broken", Cron: "61 * * * *", Args: NightlyReport{}})
	fmt.Println(errors.Is(err, backwave.ErrInvalidSchedule))
	// Output:
	// nightly-report "30 2 * * *" in America/New_York → queue reports, next 2000-01-01T02:30:00-05:00
	// true
}
