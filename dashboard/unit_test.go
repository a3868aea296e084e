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

// TestThroughput: finished jobs are the movement of the terminal counts
// between samples, bucketed by 5 minutes, over the last hour only; a
// purge (a count going down) is no negative throughput.
func TestThroughput(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	counts := func(ok, dead int) map[backwave.JobState]int {
		return map[backwave.JobState]int{backwave.StateSucceeded: ok, backwave.StateDeadLettered: dead, backwave.StateScheduled: 99}
	}
	tp := newThroughput()
	if v := tp.view(t0); v.Measured {
		t.Fatal("measured with no samples")
	}
	tp.observe(t0, counts(100, 1))
	tp.observe(t0.Add(time.Second), counts(500, 1)) // within sampleEvery: dropped
	if v := tp.view(t0); v.Measured || !v.Since.Equal(t0) {
		t.Fatalf("one sample: %+v", v)
	}
	tp.observe(t0.Add(30*time.Minute), counts(130, 3))
	tp.observe(t0.Add(50*time.Minute), counts(110, 3)) // a purge
	tp.observe(t0.Add(70*time.Minute), counts(150, 4))
	now := t0.Add(70 * time.Minute)
	v := tp.view(now)
	if !v.Measured || v.Succeeded != 70 || v.Failed != 3 {
		t.Fatalf("view after 70 minutes: succeeded %d failed %d measured %v", v.Succeeded, v.Failed, v.Measured)
	}
	if !v.Since.Equal(now.Add(-time.Hour)) {
		t.Errorf("since %s, want an hour ago", v.Since)
	}
	// 10:30 falls in the 4th bar of the hour from 10:10, 11:10 in the last.
	if v.Bars[4].Succeeded != 30 || v.Bars[11].Succeeded != 40 || v.Bars[8].Succeeded != 0 {
		t.Errorf("bars: %+v", v.Bars)
	}
	if len(tp.samples) != 4 {
		t.Errorf("%d samples kept, want the three within an hour and one before", len(tp.samples))
	}
}
