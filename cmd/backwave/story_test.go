package main

import (
	"testing"
	"time"
)

// TestSeconds: the demo's story says every duration in seconds, so a stop
// under a second reads "0.8s", not "800ms".
func TestSeconds(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		800 * time.Millisecond:  "0.8s",
		2 * time.Second:         "2s",
		1549 * time.Millisecond: "1.5s",
		30 * time.Millisecond:   "0s",
	} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %q, want %q", d, got, want)
		}
	}
}
