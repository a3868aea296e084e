package postgres

import (
	"context"
	"strconv"

	"github.com/backwave/backwave/store"
)

// TagFacet counts the Tags of the jobs p's filter keeps and returns the top
// p.BucketLimit(), highest count first, ties by key then value (byte order).
func (s *Store) TagFacet(ctx context.Context, p store.TagFacetParams) ([]store.TagCount, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	cond, args := where(p.JobFilter, nil)
	query := `SELECT t.key, t.value, count(*) AS n FROM backwave.job_tag t`
	if cond != " WHERE true" {
		query = `SELECT t.key, t.value, count(*) AS n FROM backwave.job j JOIN backwave.job_tag t ON t.job_id = j.id` + cond
	}
	args = append(args, int32(p.BucketLimit()))
	query += ` GROUP BY t.key, t.value ORDER BY n DESC, t.key COLLATE "C", t.value COLLATE "C" LIMIT $` + strconv.Itoa(len(args)) + "::int"
	var out []store.TagCount
	err := s.db.query(ctx, s.sql(query), args, func(scan scanFunc) error {
		var c store.TagCount
		var n int64
		if err := scan(&c.Tag.Key, &c.Tag.Value, &n); err != nil {
			return err
		}
		c.Count = int(n)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, s.wrap("tag facet", err)
	}
	return out, nil
}
