package sqlite

import (
	"context"
	"database/sql"

	"github.com/backwave/backwave/store"
)

// TagFacet counts the Tags of the jobs p's filter keeps and returns the top
// p.BucketLimit(), highest count first, ties by key then value (byte
// order). It groups the filtered slice's Tag rows: its cost grows with the
// slice, so narrow filters answer fastest.
func (s *Store) TagFacet(ctx context.Context, p store.TagFacetParams) ([]store.TagCount, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	cond, args := s.where(p.JobFilter)
	var query string
	if cond == " WHERE 1 = 1" {
		query = `SELECT t.key, t.value, COUNT(*) AS n FROM backwave_job_tag t`
	} else {
		query = `SELECT t.key, t.value, COUNT(*) AS n FROM backwave_job j JOIN backwave_job_tag t ON t.job_id = j.id` + cond
	}
	query = s.schema.Rename(query) + " GROUP BY t.key, t.value ORDER BY n DESC, t.key, t.value LIMIT ?"
	args = append(args, p.BucketLimit())
	var out []store.TagCount
	err := s.read(ctx, "tag facet", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var c store.TagCount
			if err := rows.Scan(&c.Tag.Key, &c.Tag.Value, &c.Count); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, err
}
