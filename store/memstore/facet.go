package memstore

import (
	"context"
	"slices"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

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
