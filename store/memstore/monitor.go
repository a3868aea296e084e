package memstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobGet returns the job, or an error wrapping store.ErrNotFound.
func (s *Store) JobGet(ctx context.Context, id job.ID) (job.Job, error) {
	if err := s.lock(ctx); err != nil {
		return job.Job{}, err
	}
	defer s.mu.Unlock()
	r, err := s.find(id)
	if err != nil {
		return job.Job{}, err
	}
	return copyJob(&r.job), nil
}

// JobList returns the jobs matching every filter in p, newest id first, at
// most p.PageLimit() of them, starting below p.BeforeID when it is set.
func (s *Store) JobList(ctx context.Context, p store.JobListParams) ([]job.Job, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	top := len(s.jobs)
	if p.BeforeID > 0 {
		top = int(min(int64(p.BeforeID)-1, int64(top)))
	}
	limit := p.PageLimit()
	var out []job.Job
	for i := top - 1; i >= 0 && len(out) < limit; i-- {
		if s.jobs[i] == nil {
			continue // purged
		}
		j := &s.jobs[i].job
		if !p.Match(j) {
			continue
		}
		out = append(out, copyJob(j))
	}
	return out, nil
}

// JobCountByState counts jobs per state, in p.Queue only if it is set.
// States with no jobs are absent from the map.
func (s *Store) JobCountByState(ctx context.Context, p store.CountParams) (map[job.State]int, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make(map[job.State]int)
	for _, r := range s.jobs {
		if r != nil && (p.Queue == "" || r.job.Queue == p.Queue) {
			out[r.job.State]++
		}
	}
	return out, nil
}

// JobTransitions returns the job's Transition Log, oldest entry first: one
// entry per state change since insert under the Job History Policy, the
// newest store.TransitionLogCap of them. It fails with store.ErrNotFound for
// an unknown job.
func (s *Store) JobTransitions(ctx context.Context, id job.ID) ([]store.Transition, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, err := s.find(id)
	if err != nil {
		return nil, err
	}
	return slices.Clone(r.log), nil
}

// JobOutput returns the Job Output the job's applied outcome stored, or nil
// if none was. It fails with store.ErrNotFound for an unknown job.
func (s *Store) JobOutput(ctx context.Context, id job.ID) ([]byte, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, err := s.find(id)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(r.output), nil
}

// find returns the job or an error wrapping store.ErrNotFound. The caller
// holds s.mu.
func (s *Store) find(id job.ID) (*row, error) {
	r := s.row(id)
	if r == nil {
		return nil, fmt.Errorf("memstore: job %d: %w", id, store.ErrNotFound)
	}
	return r, nil
}
