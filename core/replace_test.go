package core

import (
	"testing"
	"time"
)

// DebounceDue: "now + wait, but never later than created + maxWait … never
// before now".
func TestDebounceDue(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		now           time.Duration // after t0, the holder's insert
		wait, maxWait time.Duration
		want          time.Duration
	}{
		{"first of a burst", 0, time.Minute, 5 * time.Minute, time.Minute},
		{"pushed out", 2 * time.Minute, time.Minute, 5 * time.Minute, 3 * time.Minute},
		{"at the cap", 4 * time.Minute, time.Minute, 5 * time.Minute, 5 * time.Minute},
		{"capped", 4*time.Minute + 30*time.Second, time.Minute, 5 * time.Minute, 5 * time.Minute},
		{"past the cap", 6 * time.Minute, time.Minute, 5 * time.Minute, 6 * time.Minute},
		{"wait equals max wait", 0, time.Minute, time.Minute, time.Minute},
	} {
		if got := DebounceDue(t0.Add(tc.now), t0, tc.wait, tc.maxWait); !got.Equal(t0.Add(tc.want)) {
			t.Errorf("%s: DebounceDue = t0+%v, want t0+%v", tc.name, got.Sub(t0), tc.want)
		}
	}
}

// ReplaceDue: "the replacing job's own requested run-at time, or now".
func TestReplaceDue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := ReplaceDue(now, time.Time{}); !got.Equal(now) {
		t.Errorf("ReplaceDue(now, none) = %v, want now", got)
	}
	if at := now.Add(-time.Hour); !ReplaceDue(now, at).Equal(at) {
		t.Errorf("ReplaceDue(now, an hour ago) = %v, want the requested time", ReplaceDue(now, at))
	}
}
