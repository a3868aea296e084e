package memstore

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

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

// TagFacet counts the Tags of the jobs p.JobFilter keeps and returns the top
// p.BucketLimit(), highest count first, ties by Tag.
func (s *Store) TagFacet(ctx context.Context, p store.TagFacetParams) ([]store.TagCount, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	counts := make(map[job.Tag]int)
	for _, r := range s.jobs {
		if r != nil && p.Match(&r.job) {
			for _, t := range r.job.Tags {
				counts[t]++
			}
		}
	}
	out := make([]store.TagCount, 0, len(counts))
	for t, n := range counts {
		out = append(out, store.TagCount{Tag: t, Count: n})
	}
	slices.SortFunc(out, store.CompareTagCounts)
	return out[:min(len(out), p.BucketLimit())], nil
}

// TagSuggest returns up to p.SuggestLimit() Tags whose folded display form
// starts with the folded prefix, in store.CompareSuggestions order, from
// every Tag any job ever carried.
func (s *Store) TagSuggest(ctx context.Context, p store.TagSuggestParams) ([]job.Tag, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	prefix := store.FoldPrefix(p.Prefix)
	var out []job.Tag
	for t := range s.tags {
		if strings.HasPrefix(store.FoldTag(t), prefix) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, store.CompareSuggestions)
	return out[:min(len(out), p.SuggestLimit())], nil
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
