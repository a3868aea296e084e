package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// TagSuggest returns up to p.SuggestLimit() Tags whose folded display form
// starts with the folded prefix, in store.CompareSuggestions order, from
// every Tag a stored job carries.
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
