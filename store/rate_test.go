package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
)

// The window rule (package doc, Rate Limit): windows of the Period aligned
// to the Unix epoch, an instant before the epoch rounded down too.
func TestQueueRateWindowStart(t *testing.T) {
	t.Parallel()
	epoch := time.Unix(0, 0).UTC()
	for _, tc := range []struct {
		name   string
		period time.Duration
		at     time.Time
		want   time.Time
	}{
		{"the epoch starts a window", time.Minute, epoch, epoch},
		{"inside the first window", time.Minute, epoch.Add(59 * time.Second), epoch},
		{"the next window's first instant", time.Minute, epoch.Add(time.Minute), epoch.Add(time.Minute)},
		{"the clock's minutes", time.Minute, time.Date(2026, 12, 1, 11, 22, 37, 5, time.UTC), time.Date(2026, 12, 1, 11, 22, 0, 0, time.UTC)},
		{"before the epoch rounds down", time.Minute, epoch.Add(-time.Microsecond), epoch.Add(-time.Minute)},
		{"year 1", time.Hour, time.Date(1, 1, 1, 0, 30, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"nanoseconds below the store's microsecond", 90 * time.Millisecond, epoch.Add(90*time.Millisecond - time.Nanosecond), epoch},
	} {
		r := store.QueueRate{Limit: 1, Period: tc.period}
		if got := r.WindowStart(tc.at); !got.Equal(tc.want) {
			t.Errorf("%s: WindowStart(%v) = %v, want %v", tc.name, tc.at, got, tc.want)
		}
	}
}

// QueueRate.Budget: the count of the window holding now, a fresh count in
// a later window, nothing when the counted window is ahead of now.
func TestQueueRateBudget(t *testing.T) {
	t.Parallel()
	r := store.QueueRate{Limit: 5, Period: time.Minute}
	w := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := w.Add(30 * time.Second)
	for _, tc := range []struct {
		name       string
		counted    time.Time
		count      int
		wantBudget int
		wantWindow time.Time
	}{
		{"nothing counted yet", time.Time{}, 0, 5, w},
		{"part of this window spent", w, 3, 2, w},
		{"this window spent", w, 5, 0, w},
		{"over-spent after a lowered Limit", w, 9, 0, w},
		{"an earlier window is forgotten", w.Add(-time.Minute), 5, 5, w},
		{"a later window, counted by a claim with a later clock", w.Add(time.Minute), 1, 0, w.Add(time.Minute)},
	} {
		b, win := r.Budget(tc.counted, tc.count, now)
		if b != tc.wantBudget || !win.Equal(tc.wantWindow) {
			t.Errorf("%s: Budget = %d in %v, want %d in %v", tc.name, b, win, tc.wantBudget, tc.wantWindow)
		}
	}
}

func TestQueueRateValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rate store.QueueRate
		ok   bool
	}{
		{store.QueueRate{}, true},
		{store.QueueRate{Limit: 1, Period: store.MinRatePeriod}, true},
		{store.QueueRate{Limit: store.MaxRateLimit, Period: store.MaxRatePeriod}, true},
		{store.QueueRate{Limit: 10, Period: 1500 * time.Microsecond}, true},
		{store.QueueRate{Limit: 1}, false},
		{store.QueueRate{Period: time.Second}, false},
		{store.QueueRate{Limit: -1, Period: time.Second}, false},
		{store.QueueRate{Limit: store.MaxRateLimit + 1, Period: time.Second}, false},
		{store.QueueRate{Limit: 1, Period: store.MinRatePeriod - time.Microsecond}, false},
		{store.QueueRate{Limit: 1, Period: store.MaxRatePeriod + time.Microsecond}, false},
		{store.QueueRate{Limit: 1, Period: time.Second + time.Nanosecond}, false},
	} {
		err := tc.rate.Validate()
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, store.ErrInvalidParams)) {
			t.Errorf("Validate(%+v) = %v, want ok %v", tc.rate, err, tc.ok)
		}
	}
	if got := (store.QueueRate{Limit: 7, Period: 90 * time.Second}).String(); got != "7/1m30s" {
		t.Errorf("String = %q", got)
	}
	if got := store.RateDetail(store.QueueRate{}); got != "rate none" {
		t.Errorf("RateDetail(none) = %q", got)
	}
}
