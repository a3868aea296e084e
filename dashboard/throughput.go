package dashboard

import (
	"time"

	"github.com/backwave/backwave"
)

// Throughput over the last hour is served by the store (Admin.Throughput):
// the jobs that settled per minute and state, read off the finish-time
// index, so the panel is full the moment a page opens, after an incident
// as well as during one. A job purged by retention, or requeued, since it
// finished is no longer counted (docs/dashboard.md).

const (
	throughputWindow = time.Hour
	// throughputBuckets splits the hour into 5-minute bars.
	throughputBuckets = 12
)

// throughputView is the overview's throughput panel.
type throughputView struct {
	// Since is the start of the hour shown.
	Since time.Time
	throughputBar
	Bars []throughputBar
	// Max is the tallest bar's total, the scale of the meters.
	Max int
}

// throughputBar is one 5-minute bar (or the hour's total), by outcome.
type throughputBar struct {
	From         time.Time
	Succeeded    int
	DeadLettered int
	Cancelled    int
	Quarantined  int
}

// Total is every job the bar counts.
func (b throughputBar) Total() int { return b.Succeeded + b.DeadLettered + b.Cancelled + b.Quarantined }

func (b *throughputBar) add(st backwave.JobState, n int) {
	switch st {
	case backwave.StateSucceeded:
		b.Succeeded += n
	case backwave.StateDeadLettered:
		b.DeadLettered += n
	case backwave.StateCancelled:
		b.Cancelled += n
	case backwave.StateQuarantined:
		b.Quarantined += n
	}
}

// throughputOf sums the store's per-minute buckets since now less an hour
// into 5-minute bars; a bucket outside the hour is ignored.
func throughputOf(now time.Time, buckets []backwave.ThroughputBucket) throughputView {
	start := now.Add(-throughputWindow)
	width := throughputWindow / throughputBuckets
	v := throughputView{Since: start, Bars: make([]throughputBar, throughputBuckets)}
	for i := range v.Bars {
		v.Bars[i].From = start.Add(time.Duration(i) * width)
	}
	for _, b := range buckets {
		if b.Minute.Before(start.Truncate(time.Minute)) || b.Minute.After(now) {
			continue
		}
		i := min(max(int(b.Minute.Sub(start)/width), 0), throughputBuckets-1)
		v.Bars[i].add(b.State, b.Count)
		v.add(b.State, b.Count)
	}
	for _, b := range v.Bars {
		v.Max = max(v.Max, b.Total())
	}
	return v
}
