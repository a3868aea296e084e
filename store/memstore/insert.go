package memstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobInsertMany is JobInsertManyResults returning only the ids: a job whose
// unique key was held has the holder's id.
func (s *Store) JobInsertMany(ctx context.Context, p store.InsertManyParams) ([]job.ID, error) {
	res, err := s.JobInsertManyResults(ctx, p)
	return store.ResultIDs(res), err
}

// JobInsertManyResults inserts every job in one atomic step and answers per
// job in input order; ids continue the store's sequence, which starts at 1,
// and are assigned in p.InsertOrder() (every in-batch parent before its
// dependents). A job whose unique key is held is not inserted: its result
// is the holder's id with Inserted false (takeUnique). A job without
// parents is inserted Scheduled, a zero ScheduledAt meaning due at the
// store's now; a job with parents is inserted Awaiting Parent, and then
// every parent that is terminal already is counted against its latch
// (settle), which may release or cancel it at once. Tags are stored as a
// set (job.NormalizeTags). Invalid params — a parent cycle, an unknown
// parent included — insert nothing and wrap store.ErrInvalidParams.
func (s *Store) JobInsertManyResults(ctx context.Context, p store.InsertManyParams) ([]store.InsertResult, error) {
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
	if err := s.checkParents(p.Jobs); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	res, hs, err := s.insertMany(p, now, nil)
	if err != nil {
		return nil, err
	}
	hints = s.hintable(&hs, now)
	return res, nil
}

// insertMany inserts the validated jobs of p at now, as members of the
// Workflow wf returns (none when wf is nil), and returns the results and
// the Queues to hint. wf is called once the insert can no longer fail,
// before any row is written, so a new Workflow is created only with its
// members. The caller holds s.mu and checked the parents.
func (s *Store) insertMany(p store.InsertManyParams, now time.Time, wf func() *workflowRow) ([]store.InsertResult, hintSet, error) {
	payloads, err := s.payloadsFor(p, now)
	if err != nil {
		return nil, hintSet{}, err
	}
	var w *workflowRow
	if wf != nil {
		w = wf()
	}
	var hs hintSet
	ids := make([]job.ID, len(p.Jobs))
	res := make([]store.InsertResult, len(p.Jobs))
	for _, i := range p.InsertOrder() {
		nj := p.Jobs[i]
		id := job.ID(len(s.jobs) + 1)
		if holder, held := s.takeUnique(nj.Unique, id, now); held {
			ids[i], res[i] = holder, store.InsertResult{ID: holder}
			if nj.Unique.Mode.Rewrites() {
				s.rewrite(s.row(holder), nj, payloads[i], now, &hs)
				res[i].Replaced = true
			}
			continue
		}
		r := &row{job: job.Job{
			ID:          id,
			WireName:    nj.WireName,
			Queue:       nj.Queue,
			Payload:     payloads[i],
			MaxAttempts: nj.MaxAttempts,
			ScheduledAt: nj.Unique.InsertDue(now, nj.ScheduledAt).Round(0),
			CreatedAt:   now,
			// The trace context is stored as given, none when empty.
			TraceContext:   store.NormalTraceContext(nj.TraceContext),
			ConcurrencyKey: nj.ConcurrencyKey,
		}}
		if nj.Unique.Scope == store.UniqueWhileLive {
			r.unique = nj.Unique.Key
		}
		if w != nil {
			r.workflow = w.info.ID
			w.members = append(w.members, id)
		}
		s.addTags(r, nj.Tags)
		s.jobs = append(s.jobs, r)
		q := s.queue(nj.Queue)
		q.ids = append(q.ids, id)
		ids[i], res[i] = id, store.InsertResult{ID: id, Inserted: true}
		s.link(r, nj.Dependency, ids)
		s.move(r, core.InsertState(len(nj.Dependency.Parents)), core.ViaInsert, now, "")
		if p.Actor != "" {
			s.record(now, p.Actor, store.AuditEnqueue, id, nj.Queue, store.EnqueueDetail(nj.WireName))
		}
		if core.Claimable(&r.job, now) {
			hs.add(nj.Queue)
		}
	}
	for _, id := range store.ExistingParents(p.Jobs) {
		if r := s.row(id); r.job.State.Terminal() {
			s.settle(r, now)
		}
	}
	return res, hs, nil
}

// insert stores one validated job without parents (a minted or triggered
// one), Scheduled, adding its Queue to hs if it is claimable at now. The
// caller holds s.mu.
func (s *Store) insert(nj store.NewJob, now time.Time, hs *hintSet) *row {
	id := job.ID(len(s.jobs) + 1)
	r := &row{job: job.Job{
		ID:          id,
		WireName:    nj.WireName,
		Queue:       nj.Queue,
		Payload:     bytes.Clone(nj.Payload),
		MaxAttempts: nj.MaxAttempts,
		ScheduledAt: core.DueAt(now, nj.ScheduledAt).Round(0),
		CreatedAt:   now,

		ConcurrencyKey: nj.ConcurrencyKey,
	}}
	s.addTags(r, nj.Tags)
	s.jobs = append(s.jobs, r)
	q := s.queue(nj.Queue)
	q.ids = append(q.ids, id)
	s.move(r, job.StateScheduled, core.ViaInsert, now, "")
	if core.Claimable(&r.job, now) {
		hs.add(nj.Queue)
	}
	return r
}

// payloadsFor returns the payload each job of p is stored with, inserted
// or rewriting its unique key's holder: a copy of its own, or, when
// p.PayloadFor is set, what PayloadFor gives for the id the job will get
// (the holder's, for a rewrite). It runs before the insert changes
// anything, so an error — from PayloadFor, or a rewrite whose holder is
// not pending (store.ErrHolderNotPending) — leaves the store as it was: the
// ids are worked out ahead by the same rule the insert follows (ids
// continue the sequence in InsertOrder, a job whose unique key is held
// taking none; a key first taken in the batch is held by a Scheduled job).
// The caller holds s.mu.
func (s *Store) payloadsFor(p store.InsertManyParams, now time.Time) ([][]byte, error) {
	out := make([][]byte, len(p.Jobs))
	next := job.ID(len(s.jobs) + 1)
	taken := make(map[string]job.ID)
	for _, i := range p.InsertOrder() {
		nj := p.Jobs[i]
		id := next
		if k := nj.Unique.Key; k != "" {
			holder, held := taken[k]
			if h, ok := s.holds[k]; !held && ok && (h.until.IsZero() || now.Before(h.until)) {
				holder, held = h.job, true
				if err := s.pending(holder, nj.Unique); err != nil {
					return nil, fmt.Errorf("memstore: insert: jobs[%d]: %w", i, err)
				}
			}
			if held && !nj.Unique.Mode.Rewrites() {
				continue
			}
			if held {
				id = holder
			} else {
				taken[k] = id
			}
		}
		if id == next {
			next++
		}
		if p.PayloadFor == nil {
			out[i] = bytes.Clone(nj.Payload)
			continue
		}
		b, err := p.PayloadFor(i, id)
		if err != nil {
			return nil, fmt.Errorf("memstore: insert: jobs[%d]: payload: %w", i, err)
		}
		if len(b) > 0 {
			out[i] = bytes.Clone(b)
		}
	}
	return out, nil
}
