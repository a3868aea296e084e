package backwave

import (
	"strconv"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/node"
)

// RetryPolicy computes the backoff before the next Attempt of a job whose
// Attempt failed: Initial × Multiplier^(attempt-1), capped at Max, spread by
// ±Jitter, deterministic per (job, Attempt). The next due time is stored, so
// it survives a restart.
type RetryPolicy struct {
	// Initial is the delay after the first failed Attempt.
	Initial time.Duration
	// Max caps the delay before jitter is applied.
	Max time.Duration
	// Multiplier grows the delay per failed Attempt; at least 1.
	Multiplier float64
	// Jitter is the fraction of the delay by which it may move either way,
	// in [0, 1): 0.2 gives a delay within ±20%.
	Jitter float64
}

// DefaultRetryPolicy returns the policy used when Config.RetryPolicy is zero:
// 1s, 2s, 4s, … capped at 1h, ±20%. With DefaultMaxAttempts (25) a job
// that keeps failing is Dead-Lettered about 13 h 8 m after its first
// failure — shorter than Sidekiq's and River's weeks on purpose, since a
// Dead-Letter here is kept, alertable and requeued in one action; see
// docs/retries.md for the reasoning and a longer policy.
func DefaultRetryPolicy() RetryPolicy { return RetryPolicy(core.DefaultRetryPolicy()) }

// Delay returns the backoff before the Attempt after failed Attempt attempt
// of job id (attempts below 1 count as 1). It is never negative and never
// above Max×(1+Jitter).
func (p RetryPolicy) Delay(id JobID, attempt Attempt) time.Duration {
	return core.RetryPolicy(p).Delay(id, attempt)
}

// DispatchPolicy is a Worker Group's rule for choosing which Queue to claim
// from next: Strict (priority order) or Weighted (smooth weighted
// round-robin with fallthrough). Both are work-conserving: a worker never
// idles while a Queue it serves has due work. Build one with Strict or
// Weighted; the zero value serves nothing and is refused by NewClient.
type DispatchPolicy struct {
	policy node.DispatchPolicy
}

// QueueWeight is one Queue of a Weighted Dispatch Policy with its weight
// (at least 1).
type QueueWeight struct {
	Queue  string
	Weight int
}

// Strict returns a Strict Dispatch Policy: every due job of the first Queue
// before any of the second, and so on. Later Queues may starve.
func Strict(queues ...string) DispatchPolicy { return DispatchPolicy{node.Strict(queues...)} }

// Weighted returns a Weighted Dispatch Policy: free capacity is split across
// the Queues by weight, and a Queue with no due work lends its share to the
// others.
func Weighted(queues ...QueueWeight) DispatchPolicy {
	qs := make([]node.QueueWeight, len(queues))
	for i, q := range queues {
		qs[i] = node.QueueWeight(q)
	}
	return DispatchPolicy{node.Weighted(qs...)}
}

// QueueNames returns the Queues the policy serves, in its order.
func (p DispatchPolicy) QueueNames() []string { return p.policy.QueueNames() }

// String names the policy's kind and Queues, e.g. "strict(mail, default)"
// or "weighted(mail:3, default:1)".
func (p DispatchPolicy) String() string {
	var b strings.Builder
	b.WriteString(p.policy.Kind.String() + "(")
	for i, q := range p.policy.Queues {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q.Queue)
		if p.policy.Kind == node.PolicyWeighted {
			b.WriteString(":" + strconv.Itoa(q.Weight))
		}
	}
	b.WriteString(")")
	return b.String()
}
