package memstore

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// keyCounter is what the store keeps per (Queue, Concurrency Key): its
// Scheduled and Running counts (the Key Limit's and the Monitor's) and its
// Key Rate window with that window's count.
type keyCounter struct {
	scheduled, running int
	window             time.Time
	count              int
	// turn is the Fair Claim turn of the last claim that took one of the
	// key's jobs.
	turn int64
}

// cloneKeys deep-copies a Queue's key counters.
func cloneKeys(keys map[string]*keyCounter) map[string]*keyCounter {
	if keys == nil {
		return nil
	}
	c := make(map[string]*keyCounter, len(keys))
	for k, v := range keys {
		kc := *v
		c[k] = &kc
	}
	return c
}

// key returns the counter of key in q, creating it.
func (q *queue) key(key string) *keyCounter {
	if q.keys == nil {
		q.keys = map[string]*keyCounter{}
	}
	c := q.keys[key]
	if c == nil {
		c = &keyCounter{}
		q.keys[key] = c
	}
	return c
}

// countKey moves one job of key from state from to state to in q's key
// counters. Only Store.move calls it, so the counters follow the fence:
// they change exactly when an applied transition moves the job.
func (q *queue) countKey(key string, from, to job.State) {
	if from == to {
		return
	}
	c := q.key(key)
	switch from {
	case job.StateScheduled:
		c.scheduled--
	case job.StateRunning:
		c.running--
	}
	switch to {
	case job.StateScheduled:
		c.scheduled++
	case job.StateRunning:
		c.running++
	}
}

// keyPick returns the jobs a claim at now takes from q under its KeyPolicy
// (store.KeyPolicy.Pick, at most room), recording their Key Rate counts,
// and the earliest end of a Key Rate window that held a due job back. The
// caller holds s.mu.
func (s *Store) keyPick(q *queue, now time.Time, room int, skip []string) ([]*row, time.Time) {
	all := s.allDue(q, now, skip)
	keys := make([]string, len(all))
	standing := map[string]store.KeyStanding{}
	for i, r := range all {
		k := r.job.ConcurrencyKey
		keys[i] = k
		if c := q.keys[k]; c != nil {
			standing[k] = store.KeyStanding{Running: c.running, Window: c.window, Count: c.count, Turn: c.turn}
		}
	}
	policy := q.policy
	if s.planted(plant.ClaimIgnoresKeyLimit) {
		policy.Limit = 0
	}
	if s.planted(plant.ClaimIgnoresKeyRate) {
		policy.Rate = store.QueueRate{}
	}
	if s.planted(plant.ClaimIgnoresKeyOrder) {
		policy.Fair = false
	}
	pick := policy.Pick(keys, room, standing, q.turn, now)
	for k, t := range pick.Taken {
		c := q.key(k)
		c.window, c.count, c.turn = t.Window, t.Count, t.Turn
	}
	q.turn = pick.Turn
	out := make([]*row, len(pick.Take))
	for i, t := range pick.Take {
		out[i] = all[t]
	}
	return out, pick.Reopen
}

// QueueSetKeyLimit sets the Queue's Key Limit (0 removes it), making the
// Queue known if it was not. A Key Limit above the Queue's Concurrency
// Limit is refused and nothing is stored or audited.
func (s *Store) QueueSetKeyLimit(ctx context.Context, p store.QueueSetKeyLimitParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.setKeys(ctx, p.Queue, p.Actor, store.AuditQueueSetKeyLimit, store.KeyLimitDetail(p.Limit), func(q *queue) error {
		if err := store.ValidateKeyLimit(p.Limit, q.limit); err != nil {
			return err
		}
		q.policy.Limit = p.Limit
		return nil
	})
}

// QueueSetKeyRate sets the Queue's Key Rate (the zero QueueRate removes
// it), making the Queue known if it was not. A new Limit under the same
// Period keeps every key's window count; a new Period or a removed Key Rate
// forgets them.
func (s *Store) QueueSetKeyRate(ctx context.Context, p store.QueueSetKeyRateParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.setKeys(ctx, p.Queue, p.Actor, store.AuditQueueSetKeyRate, store.KeyRateDetail(p.Rate), func(q *queue) error {
		if q.policy.Rate.Period != p.Rate.Period {
			for _, c := range q.keys {
				c.window, c.count = time.Time{}, 0
			}
		}
		q.policy.Rate = p.Rate
		return nil
	})
}

// QueueSetFairClaim turns the Queue's Fair Claim on or off, making the
// Queue known if it was not.
func (s *Store) QueueSetFairClaim(ctx context.Context, p store.QueueSetFairClaimParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.setKeys(ctx, p.Queue, p.Actor, store.AuditQueueSetFairClaim, store.FairClaimDetail(p.Fair), func(q *queue) error {
		q.policy.Fair = p.Fair
		return nil
	})
}

// setKeys applies one key-policy Operator Action: set changes the Queue
// (or refuses, changing nothing), then the action is audited and the Queue
// hinted, all under one lock. An unknown Queue becomes known only if set
// succeeds.
func (s *Store) setKeys(ctx context.Context, name string, actor store.Actor, action store.AuditAction, detail string, set func(*queue) error) error {
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q := s.queues[name]
	if q == nil {
		q = &queue{}
	}
	if err := set(q); err != nil {
		return err
	}
	s.queues[name] = q
	now := s.clock.Now()
	s.record(now, actor, action, 0, name, detail)
	hints = s.hintable(&hintSet{queues: []string{name}}, now)
	return nil
}

// QueueKeys returns the Queue's keys with the most Scheduled and Running
// jobs, from the per-key counters.
func (s *Store) QueueKeys(ctx context.Context, p store.QueueKeysParams) ([]store.KeyCount, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	q := s.queues[p.Queue]
	if q == nil {
		return nil, nil
	}
	var out []store.KeyCount
	for _, k := range sortedKeys(q.keys) {
		if c := q.keys[k]; c.scheduled+c.running > 0 {
			out = append(out, store.KeyCount{Key: k, Scheduled: c.scheduled, Running: c.running})
		}
	}
	store.SortKeyCounts(out)
	return out[:min(len(out), p.KeyLimit())], nil
}

// sortedKeys returns the keys of m in order, for a deterministic walk.
func sortedKeys(m map[string]*keyCounter) []string {
	return slices.Sorted(maps.Keys(m))
}
