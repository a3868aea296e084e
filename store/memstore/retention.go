package memstore

import (
	"context"
	"slices"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobPurge deletes up to p.Limit jobs in p.States finalized at or before the
// store's now minus p.KeepFor and parent of no job still held, smallest id
// first, each with its Transition Log, Job Output, Dependency edges and
// occurrence record; a Tag no job left carries leaves Tag Suggest's
// dictionary. A job holding a Transition Log entry a live Transition
// Observer registration was not yet walked past is kept. A member of a
// Workflow is purged only once no member of it is live, and the Workflow's
// row goes with its last member. Purged ids are never reused.
func (s *Store) JobPurge(ctx context.Context, p store.PurgeParams) (store.PurgeResult, error) {
	if err := p.Validate(); err != nil {
		return store.PurgeResult{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.PurgeResult{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	horizon := now.Add(-p.KeepFor)
	floor := s.observedFloor(now)
	purged := map[string]map[job.ID]bool{} // by Queue
	n := 0
	for i := s.purgeFrom; i < len(s.jobs) && n < p.Limit; i++ {
		r := s.jobs[i]
		if r == nil || !slices.Contains(p.States, r.job.State) || r.job.FinalizedAt.After(horizon) || len(r.dependents) > 0 ||
			!unobserved(r, floor) || !s.workflowPurgeable(r) {
			continue // live, too young, a parent of a job still held, awaited by a Transition Observer, or of a live Workflow
		}
		if purged[r.job.Queue] == nil {
			purged[r.job.Queue] = map[job.ID]bool{}
		}
		purged[r.job.Queue][r.job.ID] = true
		s.remove(r)
		n++
	}
	s.afterRemove(purged)
	return store.PurgeResult{Purged: n}, nil
}

// remove deletes r with everything stored beside it (its occurrence
// record, Workflow membership, Dependency edges and Tags): the step
// JobPurge and JobDelete share. The caller holds s.mu and calls
// afterRemove once it has removed its batch.
func (s *Store) remove(r *row) {
	s.forgetJob(r)
	s.forgetMember(r)
	s.unlink(r)
	s.dropTags(r)
	s.jobs[r.job.ID-1] = nil
}

// afterRemove tidies up after a batch of removals: the purge scan's start,
// the walk refs, and the Queues' id lists (removed, by Queue). The caller
// holds s.mu.
func (s *Store) afterRemove(removed map[string]map[job.ID]bool) {
	for s.purgeFrom < len(s.jobs) && s.jobs[s.purgeFrom] == nil {
		s.purgeFrom++ // purged rows before the first kept one are never scanned again
	}
	if len(removed) > 0 {
		s.compactWalk()
	}
	for name, ids := range removed {
		q := s.queues[name]
		q.ids = slices.DeleteFunc(q.ids, func(id job.ID) bool { return ids[id] })
	}
}

// stillNeeded refuses JobDelete of terminal job r where JobPurge would
// keep it (store.CheckStillNeeded). The caller holds s.mu.
func (s *Store) stillNeeded(r *row) error {
	return store.CheckStillNeeded(r.job.ID, len(r.dependents) > 0, !s.workflowPurgeable(r), !unobserved(r, s.observedFloor(s.clock.Now())))
}

// unlink removes a purged job from its parents' lists of dependents. (It is
// the parent of none: JobPurge keeps parents until their dependents go.)
// The caller holds s.mu.
func (s *Store) unlink(r *row) {
	if r.dep == nil {
		return
	}
	for _, e := range r.dep.parents {
		if p := s.row(e.id); p != nil {
			p.dependents = slices.DeleteFunc(p.dependents, func(id job.ID) bool { return id == r.job.ID })
		}
	}
}
