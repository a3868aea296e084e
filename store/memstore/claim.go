package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobClaim leases up to p.Limit due jobs to p.Worker, charging each one's
// next Attempt and running its Lease until the store's now plus
// p.LeaseDuration. Queues are taken in the given order (a Queue named twice
// counts once); within a Queue, jobs go in due order, ties by id. Paused
// Queues are skipped, and a Queue with a Concurrency Limit yields no more
// jobs than leave its Running count at the limit; a Queue with a Rate Limit
// yields no more than leave its window's count at the Rate's Limit
// (p.Reopen says when the earliest exhausted window ends, rateReopen); a
// Queue with a KeyPolicy yields what store.KeyPolicy.Pick takes (keyPick),
// its Key Rate windows joining p.Reopen. The returned jobs are in claim
// order.
func (s *Store) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()

	now := s.clock.Now()
	expires := now.Add(p.LeaseDuration)
	var out []job.Job
	var keyReopen time.Time // the earliest end of a Key Rate window that held a job back
	for i, name := range p.Queues {
		if len(out) == p.Limit {
			break
		}
		q := s.queues[name]
		if q == nil || q.paused || slices.Contains(p.Queues[:i], name) {
			continue
		}
		room := p.Limit - len(out)
		if q.limit > 0 && !s.planted(plant.ClaimIgnoresLimit) {
			room = min(room, q.limit-q.running)
		}
		if room <= 0 {
			continue
		}
		room, window := s.rateRoom(q, room, now)
		if room <= 0 {
			continue // the Rate Limit's window is spent
		}
		var due []*row
		if q.policy.IsZero() {
			due = s.dueIn(q, now, room, p.Skip)
		} else {
			var reopen time.Time
			due, reopen = s.keyPick(q, now, room, p.Skip)
			if !reopen.IsZero() && (keyReopen.IsZero() || reopen.Before(keyReopen)) {
				keyReopen = reopen
			}
		}
		if !window.IsZero() {
			q.rate.take(window, len(due))
		}
		for _, r := range due {
			r.job.Attempt++
			s.move(r, job.StateRunning, core.ViaClaim, now, "")
			r.job.Worker = p.Worker
			r.job.LeaseExpiresAt = expires
			out = append(out, copyJob(&r.job))
		}
	}
	if p.Reopen != nil {
		*p.Reopen = s.rateReopen(p.Queues, now)
		if !keyReopen.IsZero() && (*p.Reopen == 0 || keyReopen.Sub(now) < *p.Reopen) {
			*p.Reopen = keyReopen.Sub(now)
		}
	}
	return out, nil
}

// dueIn returns up to n claimable jobs of q at now, in due order (due time,
// then id), passing over jobs of the Wire Names in skip. The caller holds s.mu.
func (s *Store) dueIn(q *queue, now time.Time, n int, skip []string) []*row {
	due := s.allDue(q, now, skip)
	return due[:min(n, len(due))]
}

// allDue returns every claimable job of q at now in due order (due time,
// then id), passing over jobs of the Wire Names in skip. The caller holds
// s.mu.
func (s *Store) allDue(q *queue, now time.Time, skip []string) []*row {
	var due []*row
	for _, id := range q.ids {
		if r := s.row(id); core.Claimable(&r.job, now) && !slices.Contains(skip, r.job.WireName) {
			due = append(due, r)
		}
	}
	slices.SortFunc(due, func(a, b *row) int {
		if c := a.job.ScheduledAt.Compare(b.job.ScheduledAt); c != 0 {
			return c
		}
		return cmp.Compare(a.job.ID, b.job.ID)
	})
	return due
}
