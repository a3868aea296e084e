package memstore

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// walkRef is one Transition Log entry in the walk's index: its sequence
// number and its job. The entry itself stays in the job's row; a ref whose
// entry is gone (the job purged, the entry trimmed past the cap) is skipped
// by the walk and dropped at the next purge.
type walkRef struct {
	seq int64
	id  job.ID
}

// observerReg is one Transition Observer registration: its durable cursor
// and the walk's Lease. One writer at a time, so Commit is always zero.
type observerReg struct {
	cursor     int64
	holder     job.WorkerID
	token      int64
	leaseUntil time.Time
	seen       time.Time
}

func cloneObservers(m map[string]*observerReg) map[string]*observerReg {
	c := maps.Clone(m)
	for k, v := range c {
		r := *v
		c[k] = &r
	}
	return c
}

// ObserverClaim registers the observer if new, takes or renews the walk's
// Lease for p.Holder and reads up to p.Limit entries past the cursor in
// sequence order (commit order: the store has one writer at a time).
func (s *Store) ObserverClaim(ctx context.Context, p store.ObserverClaimParams) (store.ObserverClaimResult, error) {
	if err := p.Validate(); err != nil {
		return store.ObserverClaimResult{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.ObserverClaimResult{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	o := s.observers[p.Observer]
	if o == nil {
		o = &observerReg{}
		if p.StartAtEnd && len(s.walk) > 0 {
			o.cursor = s.walk[len(s.walk)-1].seq
		}
		s.observers[p.Observer] = o
	}
	o.seen = now
	if o.holder != p.Holder && o.holder != "" && now.Before(o.leaseUntil) {
		return store.ObserverClaimResult{}, nil
	}
	if o.holder != p.Holder || !now.Before(o.leaseUntil) {
		o.token++
		o.holder = p.Holder
	}
	o.leaseUntil = now.Add(p.LeaseDuration)
	res := store.ObserverClaimResult{
		Held:    true,
		Token:   o.token,
		Cursor:  store.ObserverPosition{Seq: o.cursor},
		Through: store.ObserverPosition{Seq: o.cursor},
	}
	i := sort.Search(len(s.walk), func(i int) bool { return s.walk[i].seq > o.cursor })
	for n := 0; i < len(s.walk) && n < p.Limit; i++ {
		ref := s.walk[i]
		r := s.row(ref.id)
		if r == nil {
			continue // purged
		}
		k, ok := slices.BinarySearch(r.seqs, ref.seq)
		if !ok {
			continue // trimmed past the cap
		}
		n++
		res.Through.Seq = ref.seq
		res.More = n == p.Limit
		t := r.log[k]
		if !p.Declares(t.State) {
			continue
		}
		t.FailureDetail = ""
		res.Transitions = append(res.Transitions, store.ObservedTransition{
			Position: store.ObserverPosition{Seq: ref.seq}, Job: ref.id,
			WireName: r.job.WireName, Queue: r.job.Queue, Transition: t,
		})
	}
	return res, nil
}

// ObserverAdvance moves the cursor forward and renews or releases the
// walk's Lease, fenced by holder and Token.
func (s *Store) ObserverAdvance(ctx context.Context, p store.ObserverAdvanceParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	o := s.observers[p.Observer]
	if o == nil {
		return fmt.Errorf("memstore: observer %q: %w", p.Observer, store.ErrNotFound)
	}
	if o.holder != p.Holder || o.token != p.Token || !now.Before(o.leaseUntil) {
		return fmt.Errorf("memstore: observer %q: holder %s token %d: %w", p.Observer, p.Holder, p.Token, store.ErrStaleLease)
	}
	o.seen = now
	o.cursor = max(o.cursor, p.To.Seq)
	if p.Release {
		o.holder, o.leaseUntil = "", time.Time{}
	} else {
		o.leaseUntil = now.Add(p.LeaseDuration)
	}
	return nil
}

// ObserverRemove forgets the registration.
func (s *Store) ObserverRemove(ctx context.Context, observer string) error {
	if err := store.ValidateObserverName(observer); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.observers[observer] == nil {
		return fmt.Errorf("memstore: observer %q: %w", observer, store.ErrNotFound)
	}
	delete(s.observers, observer)
	return nil
}

// observedFloor is the lowest cursor of a live registration (one seen
// within store.ObserverRemoveAfter): retention keeps every job holding an
// entry past it. MaxInt64 when none is live. The caller holds s.mu.
func (s *Store) observedFloor(now time.Time) int64 {
	floor := int64(math.MaxInt64)
	for _, o := range s.observers {
		if now.Sub(o.seen) < store.ObserverRemoveAfter {
			floor = min(floor, o.cursor)
		}
	}
	return floor
}

// trimmable is how many of r's oldest Transition Log entries, at most n,
// the cap may drop: those a live Transition Observer registration was
// walked past. While one still awaits an entry, the log outgrows the cap
// until the walk passes it. The caller holds s.mu.
func (s *Store) trimmable(r *row, n int, now time.Time) int {
	if len(s.observers) == 0 {
		return n
	}
	floor := s.observedFloor(now)
	k := 0
	for k < n && r.seqs[k] <= floor {
		k++
	}
	return k
}

// unobserved reports whether every Transition Log entry of r lies at or
// before floor, so purging r loses no entry a registration awaits.
func unobserved(r *row, floor int64) bool {
	return len(r.seqs) == 0 || r.seqs[len(r.seqs)-1] <= floor
}

// compactWalk drops the walk refs of purged jobs and trimmed entries. The
// caller holds s.mu.
func (s *Store) compactWalk() {
	s.walk = slices.DeleteFunc(s.walk, func(ref walkRef) bool {
		r := s.row(ref.id)
		if r == nil {
			return true
		}
		_, ok := slices.BinarySearch(r.seqs, ref.seq)
		return !ok
	})
}
