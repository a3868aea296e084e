package jobtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

// tick is the job of the hourly schedule a year of Virtual Time runs.
type tick struct{}

func (tick) WireName() string { return "jobtest.tick" }

// year runs 2026 of an hourly Recurring Schedule in America/New_York
// through one Client and returns how many Attempts ran on each local day
// ("01-02").
func year(tb testing.TB) map[string]int {
	tb.Helper()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		tb.Skip("no zone data on this host:", err)
	}
	perDay := make(map[string]int)
	var c *jobtest.Client
	h := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[tick]) error {
		perDay[c.Now().In(ny).Format("01-02")]++
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, ny)
	c = jobtest.New(tb, backwave.Config{
		Handlers:  h,
		Schedules: []backwave.RecurringSchedule{{Name: "hourly", Cron: "0 * * * *", Zone: "America/New_York", Args: tick{}}},
		// Keep a day of history, as a deployment would keep some: the
		// store then holds about 24 jobs, not 8,760.
		Retention: &backwave.RetentionPolicy{KeepSucceeded: 24 * time.Hour, KeepDeadLettered: 24 * time.Hour},
	}, jobtest.StartAt(start.Add(-time.Minute)))
	c.AdvanceTo(time.Date(2027, 1, 1, 0, 0, 0, 0, ny).Add(-time.Minute))
	return perDay
}

// A year of an hourly schedule in a zone with daylight saving: every real
// hour runs once, so the spring-forward day has 23 runs, the fall-back day
// 25 and every other day 24, 8,760 in all.
func TestYearOfHourlySchedule(t *testing.T) {
	t.Parallel()
	perDay := year(t)
	total := 0
	for day, n := range perDay {
		total += n
		want := 24
		switch day {
		case "03-08":
			want = 23
		case "11-01":
			want = 25
		}
		if n != want {
			t.Errorf("%s: %d runs, want %d", day, n, want)
		}
	}
	if len(perDay) != 365 || total != 8760 {
		t.Fatalf("%d days, %d runs; want 365 days, 8760 runs", len(perDay), total)
	}
}

// BenchmarkYearOfHourlySchedule measures one year of an hourly schedule in
// America/New_York: 8,760 mints, claims, Attempts and outcome reports on
// Virtual Time, with retention purging behind them.
func BenchmarkYearOfHourlySchedule(b *testing.B) {
	for b.Loop() {
		if n := len(year(b)); n != 365 {
			b.Fatalf("%d days ran", n)
		}
	}
}
