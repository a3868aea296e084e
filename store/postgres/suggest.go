package postgres

import (
	"context"
	"strings"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// TagSuggest returns up to p.SuggestLimit() Tags from the dictionary whose
// folded display form starts with the folded prefix, in
// store.CompareSuggestions order: one range scan of the byte-ordered folded
// index, where every Tag with the prefix sits in one block starting at the
// prefix itself.
func (s *Store) TagSuggest(ctx context.Context, p store.TagSuggestParams) ([]job.Tag, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	prefix := pgText(store.FoldPrefix(p.Prefix))
	var out []job.Tag
	done := false
	err := s.db.query(ctx, s.sql(`SELECT key, value FROM backwave.tag
WHERE folded COLLATE "C" >= $1::text COLLATE "C"
ORDER BY folded COLLATE "C", display COLLATE "C", key COLLATE "C", value COLLATE "C" LIMIT $2::int`),
		[]any{prefix, int32(p.SuggestLimit())}, func(scan scanFunc) error {
			var t job.Tag
			if err := scan(&t.Key, &t.Value); err != nil {
				return err
			}
			if done = done || !strings.HasPrefix(store.FoldTag(t), prefix); !done {
				out = append(out, t)
			}
			return nil
		})
	if err != nil {
		return nil, s.wrap("tag suggest", err)
	}
	return out, nil
}

// foldArrays returns the folded and display forms (store.FoldTag) of the
// Tags in parallel key and value arrays, for Tag Suggest's dictionary.
func foldArrays(keys, values []string) (folded, display []string) {
	folded = make([]string, len(keys))
	display = make([]string, len(keys))
	for i := range keys {
		t := job.Tag{Key: keys[i], Value: values[i]}
		folded[i], display[i] = pgText(store.FoldTag(t)), pgText(t.String())
	}
	return folded, display
}
