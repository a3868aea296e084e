package core

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/backwave/backwave/job"
)

// RetryPolicy computes the delay before the next Attempt of a job whose
// Attempt failed: Initial × Multiplier^(attempt-1), capped at Max, then
// spread by ±Jitter (a fraction of the delay). The jitter is a pure function
// of (job id, Attempt), so the same failure always gets the same delay and the
// Core stays deterministic; distinct jobs failing together still spread out.
type RetryPolicy struct {
	// Initial is the delay after the first failed Attempt.
	Initial time.Duration
	// Max caps the delay before jitter is applied.
	Max time.Duration
	// Multiplier grows the delay per failed Attempt; at least 1.
	Multiplier float64
	// Jitter is the fraction of the delay by which it may move either way,
	// in [0, 1). 0.2 gives a delay within ±20%.
	Jitter float64
}

// DefaultRetryPolicy returns the policy a Client uses when none is
// configured: 1s, 2s, 4s, … capped at 1h, ±20%.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Initial: time.Second, Max: time.Hour, Multiplier: 2, Jitter: 0.2}
}

// DefaultMaxAttempts is the attempt ceiling of a job enqueued without one.
const DefaultMaxAttempts = 25

// ErrInvalidRetryPolicy is wrapped by RetryPolicy.Validate.
var ErrInvalidRetryPolicy = errors.New("core: invalid retry policy")

// Validate reports whether the policy is usable.
func (p RetryPolicy) Validate() error {
	switch {
	case p.Initial < 0:
		return fmt.Errorf("%w: Initial %v is negative", ErrInvalidRetryPolicy, p.Initial)
	case p.Max < p.Initial:
		return fmt.Errorf("%w: Max %v is below Initial %v", ErrInvalidRetryPolicy, p.Max, p.Initial)
	case p.Multiplier < 1 || math.IsNaN(p.Multiplier) || math.IsInf(p.Multiplier, 0):
		return fmt.Errorf("%w: Multiplier %v must be a finite number ≥ 1", ErrInvalidRetryPolicy, p.Multiplier)
	case p.Jitter < 0 || p.Jitter >= 1 || math.IsNaN(p.Jitter):
		return fmt.Errorf("%w: Jitter %v must be in [0, 1)", ErrInvalidRetryPolicy, p.Jitter)
	}
	return nil
}

// Delay returns the backoff before the Attempt after failed Attempt
// `attempt` of job id. Attempts below 1 are treated as 1. The result is never
// negative and never exceeds Max×(1+Jitter).
func (p RetryPolicy) Delay(id job.ID, attempt job.Attempt) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	base := float64(p.Initial) * math.Pow(p.Multiplier, float64(attempt-1))
	if base > float64(p.Max) || math.IsInf(base, 0) || math.IsNaN(base) {
		base = float64(p.Max)
	}
	if p.Jitter > 0 {
		// u in [-1, 1), a pure function of (id, attempt).
		u := unitFloat(mix(uint64(id), uint64(attempt)))*2 - 1
		base += base * p.Jitter * u
	}
	if base < 0 {
		return 0
	}
	return time.Duration(base)
}

// mix hashes two words to one with the splitmix64 finalizer.
func mix(a, b uint64) uint64 {
	x := a*0x9e3779b97f4a7c15 ^ (b + 0x632be59bd9b4e019)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// unitFloat maps a hash to [0, 1).
func unitFloat(h uint64) float64 { return float64(h>>11) / (1 << 53) }
