package backwave_test

import (
	"testing"
	"time"

	"github.com/backwave/backwave"
)

func TestDispatchPolicyString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    backwave.DispatchPolicy
		want string
	}{
		{backwave.Strict("mail", "default"), "strict(mail, default)"},
		{backwave.Weighted(backwave.QueueWeight{Queue: "mail", Weight: 3}, backwave.QueueWeight{Queue: "default", Weight: 1}), "weighted(mail:3, default:1)"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// The root RetryPolicy is the Core's, field for field: DefaultRetryPolicy
// and Delay give the documented backoff (1s, 2s, 4s, … ±20%).
func TestRetryPolicyDelay(t *testing.T) {
	t.Parallel()
	p := backwave.DefaultRetryPolicy()
	if p != (backwave.RetryPolicy{Initial: time.Second, Max: time.Hour, Multiplier: 2, Jitter: 0.2}) {
		t.Fatalf("DefaultRetryPolicy() = %+v", p)
	}
	for a, base := range map[backwave.Attempt]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 40: time.Hour} {
		if d := p.Delay(7, a); d < base*8/10 || d > base*12/10 {
			t.Errorf("Delay(7, %d) = %v, want %v ±20%%", a, d, base)
		}
	}
}

// TestDefaultRetryHorizon: the default horizon docs/retries.md and
// DefaultRetryPolicy's doc state — the sum of the waits between
// DefaultMaxAttempts Attempts, without jitter — is what the policy gives.
func TestDefaultRetryHorizon(t *testing.T) {
	t.Parallel()
	p := backwave.DefaultRetryPolicy()
	p.Jitter = 0
	var sum time.Duration
	for a := 1; a < backwave.DefaultMaxAttempts; a++ {
		sum += p.Delay(1, backwave.Attempt(a))
	}
	if want := 13*time.Hour + 8*time.Minute + 15*time.Second; sum != want {
		t.Errorf("the default horizon is %v; docs/retries.md and DefaultRetryPolicy's doc say %v", sum, want)
	}
}
