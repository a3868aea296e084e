package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// TagSuggest returns up to p.SuggestLimit() Tags from the dictionary whose
// folded display form starts with the folded prefix, in
// store.CompareSuggestions order: one range scan of the folded index, which
// holds every Tag with the prefix contiguously from the prefix itself.
func (s *Store) TagSuggest(ctx context.Context, p store.TagSuggestParams) ([]job.Tag, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	prefix := store.FoldPrefix(p.Prefix)
	var out []job.Tag
	err := s.read(ctx, "tag suggest", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.m.suggest, prefix, p.SuggestLimit())
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var t job.Tag
			if err := rows.Scan(&t.Key, &t.Value); err != nil {
				return err
			}
			if !strings.HasPrefix(store.FoldTag(t), prefix) {
				break // past the prefix's block
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
}

// knowTags adds tags to Tag Suggest's dictionary through st (the prepared
// m.knowTag statement).
func knowTags(ctx context.Context, st *sql.Stmt, tags []job.Tag) error {
	for _, t := range tags {
		if _, err := st.ExecContext(ctx, t.Key, t.Value, store.FoldTag(t), t.String()); err != nil {
			return fmt.Errorf("tag %s: %w", t, err)
		}
	}
	return nil
}
