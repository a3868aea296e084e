package jobtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

// Backup is the job two Recurring Schedules mint.
type Backup struct {
	Kind string `json:"kind"`
}

func (Backup) WireName() string { return "example.backup" }

// Recurring Schedules across both daylight saving changes of New York in
// 2026, played on Virtual Time: the hourly schedule follows real time (the
// repeated hour 01:00 runs twice, once in EDT and once in EST), and the
// nightly 02:30 job runs once on the night the clocks skip 02:30, right
// after the gap.
func TestExampleScheduleOverDST(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no zone data on this host:", err)
	}
	handlers := backwave.NewHandlers()
	var c *jobtest.Client
	var ran []string // "kind local-time", as each Attempt ran
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Backup]) error {
		ran = append(ran, j.Args.Kind+" "+c.Now().In(ny).Format("01-02 15:04 MST"))
		return nil
	})
	cfg := backwave.Config{
		Handlers: handlers,
		Schedules: []backwave.RecurringSchedule{
			{Name: "hourly", Cron: "0 * * * *", Zone: "America/New_York", Args: Backup{Kind: "hourly"}},
			{Name: "nightly", Cron: "30 2 * * *", Zone: "America/New_York", Args: Backup{Kind: "nightly"}},
		},
	}

	// Fall back: 2026-11-01, 02:00 EDT becomes 01:00 EST.
	c = jobtest.New(t, cfg, jobtest.StartAt(time.Date(2026, 11, 1, 0, 30, 0, 0, ny)))
	c.Advance(3 * time.Hour)
	want := []string{"hourly 11-01 01:00 EDT", "hourly 11-01 01:00 EST", "hourly 11-01 02:00 EST", "nightly 11-01 02:30 EST"}
	requireRan(t, ran, want)

	// Spring forward: 2026-03-08, 02:00 EST becomes 03:00 EDT; 02:30 does
	// not exist that night. Three real hours from 00:30 EST end at 04:30
	// EDT.
	ran = nil
	c = jobtest.New(t, cfg, jobtest.StartAt(time.Date(2026, 3, 8, 0, 30, 0, 0, ny)))
	c.Advance(3 * time.Hour)
	want = []string{"hourly 03-08 01:00 EST", "hourly 03-08 03:00 EDT", "nightly 03-08 03:00 EDT", "hourly 03-08 04:00 EDT"}
	requireRan(t, ran, want)

	jobtest.RequireEnqueued(t, c, Backup{Kind: "nightly"})
}

func requireRan(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("ran %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("ran %q, want %q", got, want)
		}
	}
}
