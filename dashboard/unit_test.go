package dashboard

import (
	"testing"
	"time"

	"github.com/backwave/backwave"
)

// TestDescribeCron: the schedules page's words for the cron forms
// RecurringSchedule accepts (glossary: Recurring Schedule).
func TestDescribeCron(t *testing.T) {
	t.Parallel()
	tests := []struct{ expr, want string }{
		{"* * * * *", "every minute every day"},
		{"*/5 * * * *", "every 5 minutes every day"},
		{"0 * * * *", "at minute 0 of every hour every day"},
		{"30 2 * * *", "at 02:30 every day"},
		{"30 2 * * 1-5", "at 02:30 on Monday to Friday"},
		{"0 9 1 * *", "at 09:00 on day 1 of the month"},
		{"0 0 13 * 5", "at 00:00 on day 13 of the month or on Friday"},
		{"15 10 * 1,7 *", "at 10:15 every day in January and July"},
		{"0 8,12,18 * * *", "at minute 0 of hours 8, 12 and 18 every day"},
		{"*/20 * * * * *", "every 20th second, every minute every day"},
		{"0 0 * * MON", "at 00:00 on MON"},
		{"@daily", "at 00:00 every day"},
		{"@every 90s", "every 90s"},
		{"@hourly", "at minute 0 of every hour"},
		{"1 2 3", "(not a five- or six-field expression)"},
	}
	for _, tt := range tests {
		if got := describeCron(tt.expr); got != tt.want {
			t.Errorf("describeCron(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// TestThroughput: the store's per-minute buckets of the last hour sum into
// 5-minute bars by outcome; a bucket older than the hour is left out.
func TestThroughput(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 11, 10, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	v := throughputOf(now, []backwave.ThroughputBucket{
		{Minute: at(2 * time.Hour), State: backwave.StateSucceeded, Count: 1000}, // outside the hour
		{Minute: at(40 * time.Minute), State: backwave.StateSucceeded, Count: 30},
		{Minute: at(40 * time.Minute), State: backwave.StateDeadLettered, Count: 2},
		{Minute: at(time.Minute), State: backwave.StateSucceeded, Count: 40},
		{Minute: at(time.Minute), State: backwave.StateQuarantined, Count: 1},
		{Minute: at(0), State: backwave.StateCancelled, Count: 3},
	})
	if v.Succeeded != 70 || v.DeadLettered != 2 || v.Cancelled != 3 || v.Quarantined != 1 {
		t.Fatalf("hour totals: %+v", v.throughputBar)
	}
	if !v.Since.Equal(now.Add(-time.Hour)) {
		t.Errorf("since %s, want an hour ago", v.Since)
	}
	// 10:30 falls in the 4th bar of the hour from 10:10, 11:09 and 11:10 in the last.
	if v.Bars[4].Succeeded != 30 || v.Bars[4].DeadLettered != 2 || v.Bars[11].Succeeded != 40 || v.Bars[11].Cancelled != 3 || v.Bars[8].Total() != 0 {
		t.Errorf("bars: %+v", v.Bars)
	}
	if v.Max != 44 {
		t.Errorf("max %d, want 44", v.Max)
	}
}
