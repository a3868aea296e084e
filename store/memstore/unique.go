package memstore

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
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

// pending checks that a newcomer in u's mode may rewrite holder: always for
// a mode that does not rewrite, and for Replace and Debounce only while the
// holder is Scheduled. The caller holds s.mu.
func (s *Store) pending(holder job.ID, u store.Unique) error {
	if !u.Mode.Rewrites() {
		return nil
	}
	r := s.row(holder)
	switch {
	case r == nil:
		return fmt.Errorf("%w: unique key %q is held by job %d, which is purged", store.ErrHolderNotPending, u.Key, holder)
	case r.job.State == job.StateRunning && s.planted(plant.ReplaceRewritesRunning):
		return nil
	case r.job.State != job.StateScheduled:
		return fmt.Errorf("%w: unique key %q is held by job %d, which is %s", store.ErrHolderNotPending, u.Key, holder, r.job.State)
	}
	return nil
}

// rewrite gives the Scheduled holder r of a unique key the newcomer nj's
// payload and Tags, and the due time nj's mode decides (store.Unique's
// RewriteDue), adding r's Queue to hs if it is now claimable, and records
// the rewrite in the audit trail. State, Attempt and Transition Log stay:
// a rewrite is no state change. The
// caller holds s.mu and checked r (pending).
func (s *Store) rewrite(r *row, nj store.NewJob, payload []byte, now time.Time, hs *hintSet) {
	r.job.Payload = payload
	s.dropTags(r)
	r.job.Tags = nil
	s.addTags(r, nj.Tags)
	r.job.ScheduledAt = nj.Unique.RewriteDue(now, r.job.CreatedAt, nj.ScheduledAt).Round(0)
	s.record(now, store.ActorSystem, store.RewriteAction(nj.Unique.Mode), r.job.ID, r.job.Queue, store.RewriteDetail(nj.Unique.Key, r.job.ScheduledAt))
	if core.Claimable(&r.job, now) {
		hs.add(r.job.Queue)
	}
}
