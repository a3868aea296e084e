package memstore

import (
	"cmp"
	"context"
	"slices"
	"strings"

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

// JobCountByQueue counts jobs per Queue and state, ordered by Queue (byte
// order) then state; zero counts are absent.
func (s *Store) JobCountByQueue(ctx context.Context) ([]store.QueueStateCount, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	type key struct {
		queue string
		state job.State
	}
	counts := make(map[key]int)
	for _, r := range s.jobs {
		if r != nil {
			counts[key{r.job.Queue, r.job.State}]++
		}
	}
	out := make([]store.QueueStateCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, store.QueueStateCount{Queue: k.queue, State: k.state, Count: n})
	}
	slices.SortFunc(out, func(a, b store.QueueStateCount) int {
		if c := strings.Compare(a.Queue, b.Queue); c != 0 {
			return c
		}
		return cmp.Compare(a.State, b.State)
	})
	return out, nil
}

// AuditList returns the audit trail, newest entry first, filtered and paged
// by p.
func (s *Store) AuditList(ctx context.Context, p store.AuditListParams) ([]store.AuditEntry, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.AuditEntry
	for i := len(s.audit) - 1; i >= 0 && len(out) < p.PageLimit(); i-- {
		e := s.audit[i]
		if (p.BeforeID > 0 && e.ID >= p.BeforeID) || (p.JobID != 0 && e.JobID != p.JobID) || (p.Queue != "" && e.Queue != p.Queue) {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}
