package memstore

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// LeaseRenew extends every Lease still held by p.Worker (the job Running
// under that worker at exactly that Attempt) to the store's now plus
// p.LeaseDuration, and answers each Lease in input order: renewed, cancel
// requested (renewed, and an operator asked the job to stop), or lost. A
// Lease that lapsed but was not yet expired is still held and renews.
func (s *Store) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()

	now := s.clock.Now()
	out := make([]store.RenewResult, len(p.Leases))
	for i, l := range p.Leases {
		out[i] = store.RenewResult{Lease: l, Status: store.RenewLost}
		r := s.held(p.Worker, l)
		if r == nil {
			if s.planted(plant.CursorIgnoresFence) {
				s.saveCursor(s.row(l.ID), l, p.Cursors, now)
			}
			continue
		}
		r.job.LeaseExpiresAt = now.Add(p.LeaseDuration)
		if k := slices.IndexFunc(p.Progress, func(pr store.ProgressReport) bool { return pr.Lease == l }); k >= 0 {
			pr := p.Progress[k]
			r.job.Progress = &job.Progress{Attempt: l.Attempt, Fraction: pr.Fraction, Note: pr.Note, At: now}
		}
		s.saveCursor(r, l, p.Cursors, now)
		out[i].Status = store.RenewRenewed
		if r.job.CancelRequested {
			out[i].Status = store.RenewCancelRequested
		}
	}
	return out, nil
}

// saveCursor makes the Cursor of cursors that names l, if one does, the
// Cursor of r's job, saved by l's Attempt at now. The caller holds s.mu and
// has checked the fence.
func (s *Store) saveCursor(r *row, l job.Lease, cursors []store.CursorSave, now time.Time) {
	if r == nil {
		return
	}
	if k := slices.IndexFunc(cursors, func(c store.CursorSave) bool { return c.Lease == l }); k >= 0 {
		r.job.Cursor = &job.Cursor{Attempt: l.Attempt, Value: bytes.Clone(cursors[k].Value), At: now}
	}
}

// LeaseExpire ends the lapsed Leases (expiry time at or before the store's
// now) of Running jobs in p.Queues, smallest job id first, at most p.Limit of
// them (0: all). Each job moves as core.AfterLeaseLoss says: Dead-Lettered at
// its attempt ceiling, otherwise Scheduled and due now with the Retry Cause
// lease expired (core.RetryCauseAfter). Slots are freed. The
// expired Leases are returned in id order.
func (s *Store) LeaseExpire(ctx context.Context, p store.ExpireParams) (store.ExpireResult, error) {
	if err := p.Validate(); err != nil {
		return store.ExpireResult{}, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return store.ExpireResult{}, err
	}
	defer s.mu.Unlock()

	now := s.clock.Now()
	var lapsed []job.ID
	for i, name := range p.Queues {
		q := s.queues[name]
		if q == nil || slices.Contains(p.Queues[:i], name) {
			continue
		}
		for _, id := range q.ids {
			if j := &s.row(id).job; j.State == job.StateRunning && !j.LeaseExpiresAt.After(now) {
				lapsed = append(lapsed, id)
			}
		}
	}
	slices.Sort(lapsed)
	if p.Limit > 0 && len(lapsed) > p.Limit {
		lapsed = lapsed[:p.Limit]
	}
	var hs hintSet
	var res store.ExpireResult
	for _, id := range lapsed {
		r := s.row(id)
		res.Expired = append(res.Expired, r.job.Lease())
		s.endLease(r, core.ViaExpire, now)
		hs.add(r.job.Queue)
	}
	hints = s.hintable(&hs, now)
	return res, nil
}

// LeaseRelinquish hands back each Lease p.Worker still holds, in input
// order: the job returns to Scheduled due now with its Attempt as charged
// and its Retry Cause untouched, or dead-letters if that Attempt was its
// last (core.AfterLeaseLoss). Slots are freed; stale Leases are skipped.
func (s *Store) LeaseRelinquish(ctx context.Context, p store.RelinquishParams) (store.RelinquishResult, error) {
	if err := p.Validate(); err != nil {
		return store.RelinquishResult{}, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return store.RelinquishResult{}, err
	}
	defer s.mu.Unlock()

	now := s.clock.Now()
	var hs hintSet
	var res store.RelinquishResult
	for _, l := range p.Leases {
		r := s.held(p.Worker, l)
		if r == nil {
			continue
		}
		s.endLease(r, core.ViaRelinquish, now)
		res.Relinquished = append(res.Relinquished, l)
		hs.add(r.job.Queue)
	}
	hints = s.hintable(&hs, now)
	return res, nil
}

// endLease ends a Running job's Lease without an outcome, by expiry or
// Relinquish, as core.LeaseLoss says: Cancelled if its cancel was
// requested, else as core.AfterLeaseLoss says. The caller holds s.mu.
func (s *Store) endLease(r *row, via core.Via, now time.Time) {
	to, via := core.LeaseLoss(r.job.Attempt, r.job.Ceiling(), via, r.job.CancelRequested)
	switch to {
	case job.StateScheduled:
		r.job.ScheduledAt = now
	case job.StateCancelled:
		r.job.CancelCause = job.CancelCauseOperator
	}
	s.move(r, to, via, now, "")
}
