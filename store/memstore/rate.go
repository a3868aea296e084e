package memstore

import (
	"context"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/store"
)

// rateState is a Queue's Rate Limit and the window the store last counted
// claims in (see Rate Limit in the store package doc).
type rateState struct {
	rate store.QueueRate
	// window is the start of the counted window (zero: none yet), count the
	// claims counted in it.
	window time.Time
	count  int
}

// budget returns how many jobs a claim at now may take from the Queue under
// its Rate Limit, and the window it counts them in; -1 when the Queue has no
// Rate Limit.
func (r *rateState) budget(now time.Time) (int, time.Time) {
	if r.rate.IsZero() {
		return -1, time.Time{}
	}
	return r.rate.Budget(r.window, r.count, now)
}

// started returns how many claims the window holding now counted.
func (r *rateState) started(now time.Time) int {
	if r.rate.IsZero() || !r.window.Equal(r.rate.WindowStart(now)) {
		return 0
	}
	return r.count
}

// take counts n claims in window.
func (r *rateState) take(window time.Time, n int) {
	if r.window.Equal(window) {
		r.count += n
		return
	}
	r.window, r.count = window, n
}

// rateRoom caps room by q's Rate Limit at now. It returns the capped room
// and the window the claims count in (zero without a Rate Limit). The
// caller holds s.mu.
func (s *Store) rateRoom(q *queue, room int, now time.Time) (int, time.Time) {
	budget, window := q.rate.budget(now)
	if budget < 0 || s.planted(plant.ClaimIgnoresRate) {
		return room, time.Time{}
	}
	return min(room, budget), window
}

// rateReopen is a claim's Reopen, read after the claim: how long from now
// until the earliest end of a window that left a rated, unpaused Queue of
// queues no budget while it still has a claimable job; zero if none. The
// caller holds s.mu.
func (s *Store) rateReopen(queues []string, now time.Time) time.Duration {
	var reopen time.Time
	for _, name := range queues {
		q := s.queues[name]
		if q == nil || q.paused || s.planted(plant.ClaimIgnoresRate) {
			continue
		}
		if budget, window := q.rate.budget(now); budget != 0 || !s.hasClaimable(q, now) {
			continue
		} else if ends := window.Add(q.rate.rate.Period); reopen.IsZero() || ends.Before(reopen) {
			reopen = ends
		}
	}
	if reopen.IsZero() {
		return 0
	}
	return reopen.Sub(now)
}

// hasClaimable reports whether q has a job claimable at now. The caller
// holds s.mu.
func (s *Store) hasClaimable(q *queue, now time.Time) bool {
	for _, id := range q.ids {
		if core.Claimable(&s.row(id).job, now) {
			return true
		}
	}
	return false
}

// QueueSetRate sets the Queue's Rate Limit (the zero QueueRate removes it),
// making the Queue known if it was not. A new Limit under the same Period
// keeps the window's count; a new Period or a removed Rate forgets it.
func (s *Store) QueueSetRate(ctx context.Context, p store.QueueSetRateParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q := s.queue(p.Queue)
	if q.rate.rate.Period != p.Rate.Period {
		q.rate = rateState{}
	}
	q.rate.rate = p.Rate
	now := s.clock.Now()
	s.record(now, p.Actor, store.AuditQueueSetRate, 0, p.Queue, store.RateDetail(p.Rate))
	hints = s.hintable(&hintSet{queues: []string{p.Queue}}, now)
	return nil
}
