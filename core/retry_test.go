package core

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
)

// twinDelay is a deliberately simple twin of RetryPolicy.Delay without
// jitter: multiply step by step, cap at Max.
func twinDelay(p RetryPolicy, attempt job.Attempt) time.Duration {
	d := float64(p.Initial)
	for a := job.Attempt(1); a < attempt; a++ {
		d *= p.Multiplier
		if d > float64(p.Max) {
			return p.Max
		}
	}
	return min(time.Duration(d), p.Max)
}

// TestDelayMatchesTwin checks the closed form against the twin, jitter off
// (engine-runtime-reference.txt, "Retry policy": Initial/Max/Multiplier).
func TestDelayMatchesTwin(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		p := RetryPolicy{
			Initial:    time.Duration(r.Int64N(int64(10 * time.Second))),
			Multiplier: 1 + r.Float64()*3,
		}
		p.Max = p.Initial + time.Duration(r.Int64N(int64(time.Hour)))
		attempt := job.Attempt(1 + r.IntN(60))
		got, want := p.Delay(job.ID(r.Int64()), attempt), twinDelay(p, attempt)
		// Float rounding may differ by a few nanoseconds.
		if diff := got - want; diff < -time.Microsecond || diff > time.Microsecond {
			t.Fatalf("Delay(%+v, attempt %d) = %v, twin says %v", p, attempt, got, want)
		}
	}
}

// TestDelayJitter checks that jitter stays in ±Jitter, is a pure function of
// (job id, Attempt), and spreads distinct jobs apart.
func TestDelayJitter(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Initial: time.Second, Max: time.Minute, Multiplier: 2, Jitter: 0.25}
	seen := map[time.Duration]bool{}
	for id := job.ID(1); id <= 1000; id++ {
		for a := job.Attempt(1); a <= 8; a++ {
			base := twinDelay(p, a)
			d := p.Delay(id, a)
			lo, hi := time.Duration(float64(base)*0.75), time.Duration(float64(base)*1.25)
			if d < lo || d > hi {
				t.Fatalf("job %d attempt %d: %v outside [%v, %v]", id, a, d, lo, hi)
			}
			if d2 := p.Delay(id, a); d2 != d {
				t.Fatalf("job %d attempt %d: %v then %v; jitter must be pure", id, a, d, d2)
			}
			if a == 1 {
				seen[d] = true
			}
		}
	}
	if len(seen) < 900 {
		t.Fatalf("1000 jobs' first retries got only %d distinct delays; jitter does not spread", len(seen))
	}
}

func TestDelayEdges(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Initial: time.Second, Max: 10 * time.Second, Multiplier: 10}
	for _, tc := range []struct {
		attempt job.Attempt
		want    time.Duration
	}{
		{-3, time.Second}, {0, time.Second}, {1, time.Second}, {2, 10 * time.Second},
		{3, 10 * time.Second}, {1 << 30, 10 * time.Second},
	} {
		if got := p.Delay(7, tc.attempt); got != tc.want {
			t.Errorf("attempt %d: got %v, want %v", tc.attempt, got, tc.want)
		}
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    RetryPolicy
		ok   bool
	}{
		{"default", DefaultRetryPolicy(), true},
		{"zero delays", RetryPolicy{Multiplier: 1}, true},
		{"negative initial", RetryPolicy{Initial: -1, Max: 1, Multiplier: 1}, false},
		{"max below initial", RetryPolicy{Initial: 2, Max: 1, Multiplier: 1}, false},
		{"multiplier below 1", RetryPolicy{Initial: 1, Max: 2, Multiplier: 0.5}, false},
		{"jitter 1", RetryPolicy{Initial: 1, Max: 2, Multiplier: 2, Jitter: 1}, false},
		{"negative jitter", RetryPolicy{Initial: 1, Max: 2, Multiplier: 2, Jitter: -0.1}, false},
	} {
		err := tc.p.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%t", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidRetryPolicy) {
			t.Errorf("%s: %v does not wrap ErrInvalidRetryPolicy", tc.name, err)
		}
	}
}
