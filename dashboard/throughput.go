package dashboard

import (
	"sync"
	"time"

	"github.com/backwave/backwave"
)

// Throughput over the last hour comes from the store's maintained counts,
// not from a scan: the dashboard keeps a small ring of count samples (one
// at most every sampleEvery, taken whenever the overview renders or a live
// page's event stream checks the store) and reports how far the terminal
// counts moved between samples. It therefore covers the time since this
// dashboard process first looked, up to an hour, and a retention purge in
// between lowers a terminal count, which shows as a window with nothing
// finished rather than as a negative number. The Admin offers no count of
// jobs finished per interval; docs/dashboard.md says so.

const (
	sampleEvery  = 10 * time.Second
	sampleWindow = time.Hour
	// throughputBuckets splits the hour into 5-minute bars.
	throughputBuckets = 12
)

// sample is the terminal counts at one instant.
type sample struct {
	at        time.Time
	succeeded int
	failed    int // Dead-Lettered, Cancelled and Quarantined
}

// throughput holds the samples of one dashboard.
type throughput struct {
	mu      sync.Mutex
	samples []sample // oldest first, spanning at most sampleWindow plus one
}

func newThroughput() *throughput { return &throughput{} }

// observe records the counts seen at now, at most one sample per
// sampleEvery, and drops samples older than the window (keeping one just
// before it, so the window's start can be measured).
func (t *throughput) observe(now time.Time, counts map[backwave.JobState]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.samples); n > 0 && now.Sub(t.samples[n-1].at) < sampleEvery {
		return
	}
	t.samples = append(t.samples, sample{
		at:        now,
		succeeded: counts[backwave.StateSucceeded],
		failed:    counts[backwave.StateDeadLettered] + counts[backwave.StateCancelled] + counts[backwave.StateQuarantined],
	})
	cut := 0
	for cut+1 < len(t.samples) && now.Sub(t.samples[cut+1].at) >= sampleWindow {
		cut++
	}
	t.samples = t.samples[cut:]
}

// throughputView is the overview's throughput panel.
type throughputView struct {
	// Since is the instant the measured span starts: an hour ago, or the
	// first sample when this dashboard has looked for less.
	Since     time.Time
	Succeeded int
	Failed    int
	Bars      []throughputBar
	Max       int
	// Measured is false until two samples exist.
	Measured bool
}

// throughputBar is one 5-minute bar.
type throughputBar struct {
	From      time.Time
	Succeeded int
	Failed    int
}

// view sums the moves of the terminal counts over the last hour, into
// 5-minute bars. A move between two samples is put in the bar of the
// later one.
func (t *throughput) view(now time.Time) throughputView {
	t.mu.Lock()
	defer t.mu.Unlock()
	var v throughputView
	start := now.Add(-sampleWindow)
	width := sampleWindow / throughputBuckets
	v.Bars = make([]throughputBar, throughputBuckets)
	for i := range v.Bars {
		v.Bars[i].From = start.Add(time.Duration(i) * width)
	}
	if len(t.samples) < 2 {
		if len(t.samples) == 1 {
			v.Since = t.samples[0].at
		}
		return v
	}
	v.Measured = true
	v.Since = t.samples[0].at
	if v.Since.Before(start) {
		v.Since = start
	}
	for i := 1; i < len(t.samples); i++ {
		prev, cur := t.samples[i-1], t.samples[i]
		if !cur.at.After(start) {
			continue
		}
		ds := max(cur.succeeded-prev.succeeded, 0)
		df := max(cur.failed-prev.failed, 0)
		b := min(int(cur.at.Sub(start)/width), throughputBuckets-1)
		v.Bars[b].Succeeded += ds
		v.Bars[b].Failed += df
		v.Succeeded += ds
		v.Failed += df
	}
	for _, b := range v.Bars {
		v.Max = max(v.Max, b.Succeeded+b.Failed)
	}
	return v
}
