package memstore

import (
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// hold is the job holding one unique key: until it first ends terminal
// (until is zero: UniqueWhileLive), or until the instant until
// (UniquePeriod). It is the in-memory twin of the SQL adapters' key row.
type hold struct {
	job   job.ID
	until time.Time
}

// takeUnique takes u's key for the job id about to be inserted at now, or
// reports the job holding it. A job without a key takes nothing. A
// while-live hold ends when its job first ends terminal (release); a
// period hold when now reaches its end. The caller holds s.mu, which makes
// the look-up and the take one step.
func (s *Store) takeUnique(u store.Unique, id job.ID, now time.Time) (holder job.ID, held bool) {
	if u.Key == "" {
		return 0, false
	}
	if h, ok := s.holds[u.Key]; ok && (h.until.IsZero() || now.Before(h.until)) {
		return h.job, true
	}
	h := hold{job: id}
	if u.Scope == store.UniquePeriod {
		h.until = now.Add(u.Period)
	}
	s.holds[u.Key] = h
	return 0, false
}

// release frees the while-live key r holds, as r ends terminal (Store.move).
// The key is r's for good no more: an operator requeue brings r back
// without it.
func (s *Store) release(r *row) {
	if h, ok := s.holds[r.unique]; ok && h.job == r.job.ID && h.until.IsZero() {
		delete(s.holds, r.unique)
	}
	r.unique = ""
}
