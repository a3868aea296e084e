package backwave

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/store"
)

// KeyPolicy is a Queue's policy over the Concurrency Keys of its jobs:
//
//   - Limit, the Key Limit: at most Limit jobs of one key Run at once in
//     the Queue, cluster-wide (0: none);
//   - Rate, the Key Rate: at most Rate.Limit jobs of one key start per
//     window of Rate.Period, by the Rate Limit's window rule (zero: none);
//   - Fair, Fair Claim: a claim takes due jobs round-robin across keys, so
//     a key with a handful of due jobs gets a turn beside one with a
//     hundred thousand.
//
// Jobs without a key form one key of their own for Fair Claim; the Key
// Limit and the Key Rate bind only jobs that carry a key. The Queue's own
// Concurrency Limit and Rate Limit hold as well. The zero KeyPolicy is
// none. Set it with Admin.SetKeyLimit, Admin.SetKeyRate and
// Admin.SetFairClaim.
type KeyPolicy struct {
	// Limit is the Key Limit; 0 when there is none.
	Limit int
	// Rate is the Key Rate; the zero QueueRate when there is none.
	Rate QueueRate
	// Fair is whether Fair Claim is on.
	Fair bool
}

// IsZero reports whether p is no key policy.
func (p KeyPolicy) IsZero() bool { return p == KeyPolicy{} }

// String renders the policy, e.g. "key limit 2, key rate 10/1m0s, fair",
// or "none".
func (p KeyPolicy) String() string { return p.store().String() }

// store returns p as the Storage Contract's KeyPolicy.
func (p KeyPolicy) store() store.KeyPolicy {
	return store.KeyPolicy{Limit: p.Limit, Rate: store.QueueRate(p.Rate), Fair: p.Fair}
}

// keyPolicyOf returns the store's KeyPolicy as the root package's.
func keyPolicyOf(p store.KeyPolicy) KeyPolicy {
	return KeyPolicy{Limit: p.Limit, Rate: QueueRate(p.Rate), Fair: p.Fair}
}

// MaxConcurrencyKeyBytes bounds a Concurrency Key: at most 128 bytes of
// UTF-8.
const MaxConcurrencyKeyBytes = store.MaxConcurrencyKeyBytes

// WithConcurrencyKey gives the job a Concurrency Key: the name, in the
// application's own terms ("acme", "customer:1042"), of whose work it is,
// so its Queue's KeyPolicy can share the Queue fairly between keys. key
// must be non-empty valid UTF-8 of at most MaxConcurrencyKeyBytes bytes
// without control characters; anything else is an error wrapping
// ErrInvalidJob. A job has at most one key: the last WithConcurrencyKey
// wins. Unlike a Tag, the key is read when the job is claimed.
func WithConcurrencyKey(key string) EnqueueOption {
	return func(s *enqueueSettings) { s.key, s.hasKey = key, true }
}

// concurrencyKey checks the WithConcurrencyKey option of one job.
func (s *enqueueSettings) concurrencyKey() (string, error) {
	switch {
	case !s.hasKey:
		return "", nil
	case s.key == "":
		return "", fmt.Errorf(`%w: WithConcurrencyKey(""): a Concurrency Key needs a name (leave the option out for none)`, ErrInvalidJob)
	}
	if err := store.ValidateConcurrencyKey(s.key); err != nil {
		return "", fmt.Errorf("%w: WithConcurrencyKey: %w", ErrInvalidJob, err)
	}
	return s.key, nil
}

// KeyCount is one Concurrency Key of a Queue with its live jobs, as
// Admin.QueueKeys returns it.
type KeyCount struct {
	// Key is the Concurrency Key; "" stands for the Queue's jobs without
	// one.
	Key string
	// Scheduled counts the key's Scheduled jobs, due or not yet due.
	Scheduled int
	// Running counts the key's Running jobs.
	Running int
}

// SetKeyLimit sets queue's Key Limit: at most limit jobs of one
// Concurrency Key Run in it at once, cluster-wide, beside its Concurrency
// Limit (both hold). limit must be at least 1 and, when the Queue has a
// Concurrency Limit, not above it; anything else is an error wrapping
// ErrInvalidParams and stores nothing (RemoveKeyLimit removes it). It is an
// audited Operator Action and never revokes a Lease. An unknown Queue is
// refused as by PauseQueue.
func (a *Admin) SetKeyLimit(ctx context.Context, queue string, limit int) error {
	if limit < 1 {
		return fmt.Errorf("backwave: set the key limit of queue %q: %w: key limit %d (want at least 1; RemoveKeyLimit removes it)", queue, ErrInvalidParams, limit)
	}
	return a.setKeyLimit(ctx, queue, limit)
}

// RemoveKeyLimit removes queue's Key Limit. It is an audited Operator
// Action; an unknown Queue is refused as by PauseQueue.
func (a *Admin) RemoveKeyLimit(ctx context.Context, queue string) error {
	return a.setKeyLimit(ctx, queue, 0)
}

func (a *Admin) setKeyLimit(ctx context.Context, queue string, limit int) error {
	return a.queueAction(ctx, queue, true, fmt.Sprintf("set the key limit of queue %q", queue), func() error {
		return a.store.QueueSetKeyLimit(ctx, store.QueueSetKeyLimitParams{Queue: queue, Limit: limit, Actor: store.Actor(a.actor)})
	})
}

// SetKeyRate sets queue's Key Rate: at most rate.Limit jobs of one
// Concurrency Key start per window of rate.Period, by the Rate Limit's
// window rule kept per key; the zero QueueRate removes it. It is an
// audited Operator Action. An invalid rate is an error wrapping
// ErrInvalidParams; a store whose schema has no Concurrency Keys yet
// refuses it with an error wrapping ErrSchemaTooOld, and an unknown Queue
// is refused as by PauseQueue. Nothing is stored then.
func (a *Admin) SetKeyRate(ctx context.Context, queue string, rate QueueRate) error {
	return a.queueAction(ctx, queue, true, fmt.Sprintf("set the key rate of queue %q", queue), func() error {
		return a.store.QueueSetKeyRate(ctx, store.QueueSetKeyRateParams{Queue: queue, Rate: store.QueueRate(rate), Actor: store.Actor(a.actor)})
	})
}

// SetFairClaim turns queue's Fair Claim on or off: with it on, a claim
// takes due jobs round-robin across Concurrency Keys, least recently
// served key first, instead of in plain due order. It is an audited
// Operator Action; an unknown Queue is refused as by PauseQueue.
func (a *Admin) SetFairClaim(ctx context.Context, queue string, on bool) error {
	return a.queueAction(ctx, queue, true, fmt.Sprintf("set fair claim of queue %q", queue), func() error {
		return a.store.QueueSetFairClaim(ctx, store.QueueSetFairClaimParams{Queue: queue, Fair: on, Actor: store.Actor(a.actor)})
	})
}

// QueueKeys returns queue's Concurrency Keys with the most Scheduled and
// Running jobs together, most first (ties by key), at most limit of them
// (10 if 0, at most 100); jobs without a key count as the key "". The store
// reads counters it keeps per key, so it is cheap at any table size. An
// unknown Queue has no keys (Admin.Queue tells an unknown one apart).
func (a *Admin) QueueKeys(ctx context.Context, queue string, limit int) ([]KeyCount, error) {
	got, err := a.store.QueueKeys(ctx, store.QueueKeysParams{Queue: queue, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("backwave: keys of queue %q: %w", queue, err)
	}

	out := make([]KeyCount, len(got))
	for i, k := range got {
		out[i] = KeyCount(k)
	}
	return out, nil
}
