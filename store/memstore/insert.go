package memstore

import (
	"bytes"
	"context"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobInsertMany inserts every job in one atomic step, Scheduled, and returns
// their ids in input order; ids continue the store's sequence, which starts
// at 1. A zero ScheduledAt means due at the store's now. Tags are stored as a
// set (job.NormalizeTags). Invalid params insert nothing and wrap
// store.ErrInvalidParams.
func (s *Store) JobInsertMany(ctx context.Context, p store.InsertManyParams) ([]job.ID, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var hints []string
	// Deferred first so it runs after the unlock below: hints go out
	// without the store's lock held.
	defer func() { s.hints.Announce(hints) }()
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()

	now := s.clock.Now()
	var hs hintSet
	ids := make([]job.ID, 0, len(p.Jobs))
	for _, nj := range p.Jobs {
		id := job.ID(len(s.jobs) + 1)
		r := &row{job: job.Job{
			ID:          id,
			WireName:    nj.WireName,
			Queue:       nj.Queue,
			Payload:     bytes.Clone(nj.Payload),
			MaxAttempts: nj.MaxAttempts,
			ScheduledAt: core.DueAt(now, nj.ScheduledAt).Round(0),
			CreatedAt:   now,
		}}
		s.addTags(r, nj.Tags)
		s.jobs = append(s.jobs, r)
		q := s.queue(nj.Queue)
		q.ids = append(q.ids, id)
		s.move(r, job.StateScheduled, core.ViaInsert, now, "")
		if core.Claimable(&r.job, now) {
			hs.add(nj.Queue)
		}
		ids = append(ids, id)
	}
	hints = s.hintable(&hs, now)
	return ids, nil
}
