package backwave

import "github.com/backwave/backwave/store"

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
