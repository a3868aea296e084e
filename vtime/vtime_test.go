package vtime_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/vtime"
)

var start = time.Date(2030, time.March, 4, 5, 6, 7, 8, time.UTC)

// Glossary, Virtual Time: a controllable clock that tests advance explicitly.
func TestManualStandsStillUntilMoved(t *testing.T) {
	t.Parallel()
	c := vtime.NewManual(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("second Now() = %v, want %v (the clock moved by itself)", got, start)
	}
}

func TestManualAdvance(t *testing.T) {
	t.Parallel()
	c := vtime.NewManual(start)
	if got, want := c.Advance(90*time.Second), start.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("Advance returned %v, want %v", got, want)
	}
	c.Advance(0)
	if got, want := c.Now(), start.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("Now() = %v, want %v", got, want)
	}
	// Years of virtual time cost nothing.
	c.Advance(10 * 365 * 24 * time.Hour)
	if got := c.Now().Year(); got != 2040 {
		t.Fatalf("year after ten years = %d, want 2040", got)
	}
}

func TestManualAdvanceNegativePanics(t *testing.T) {
	t.Parallel()
	c := vtime.NewManual(start)
	defer func() {
		if recover() == nil {
			t.Fatal("Advance(-1s) did not panic")
		}
		if got := c.Now(); !got.Equal(start) {
			t.Fatalf("clock moved to %v after a refused Advance", got)
		}
	}()
	c.Advance(-time.Second)
}

func TestManualSet(t *testing.T) {
	t.Parallel()
	c := vtime.NewManual(start)
	later := start.Add(time.Hour)
	if err := c.Set(later); err != nil {
		t.Fatalf("Set(later): %v", err)
	}
	if err := c.Set(later); err != nil {
		t.Fatalf("Set(same time): %v", err)
	}
	err := c.Set(start)
	if !errors.Is(err, vtime.ErrBackwards) {
		t.Fatalf("Set(earlier) error = %v, want ErrBackwards", err)
	}
	if got := c.Now(); !got.Equal(later) {
		t.Fatalf("Now() = %v after a refused Set, want %v", got, later)
	}
}

func TestManualStripsMonotonicReading(t *testing.T) {
	t.Parallel()
	withMono := time.Now() // a test may read the wall clock; the package never does
	c := vtime.NewManual(withMono)
	if got := c.Now(); got != withMono.Round(0) {
		t.Fatalf("Now() = %#v, want the wall reading without monotonic part", got)
	}
	if err := c.Set(withMono.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := c.Now(); got != withMono.Add(time.Minute).Round(0) {
		t.Fatalf("Set kept a monotonic reading: %#v", got)
	}
}

func TestManualConcurrentUse(t *testing.T) {
	t.Parallel()
	c := vtime.NewManual(start)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			prev := c.Now()
			for range 1000 {
				c.Advance(time.Millisecond)
				now := c.Now()
				if now.Before(prev) {
					t.Errorf("clock went backwards: %v then %v", prev, now)
					return
				}
				prev = now
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(8*1000*time.Millisecond); !got.Equal(want) {
		t.Fatalf("Now() = %v, want %v", got, want)
	}
}

func TestManualIsAClock(t *testing.T) {
	t.Parallel()
	var _ vtime.Clock = vtime.NewManual(vtime.Epoch)
}
