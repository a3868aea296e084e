package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// where renders f as SQL conditions on the job table aliased j, with its
// args. States are rendered as literal codes, so a single-state filter on a
// settled state, or the Retrying view, meets its partial index.
func (s *Store) where(f store.JobFilter) (string, []any) {
	var sb strings.Builder
	var args []any
	sb.WriteString(" WHERE 1 = 1")
	if len(f.States) > 0 {
		codes := make([]string, 0, len(f.States))
		for _, st := range f.States {
			if c, ok := stateCodes[st]; ok {
				codes = append(codes, strconv.FormatInt(c, 10))
			}
		}
		if len(codes) == 0 {
			codes = append(codes, "-1")
		}
		if len(codes) == 1 {
			sb.WriteString(" AND j.state = " + codes[0])
		} else {
			sb.WriteString(" AND j.state IN (" + strings.Join(codes, ", ") + ")")
		}
	}
	if f.Retrying {
		sb.WriteString(" AND j.state = 1 AND j.retry_cause <> 0")
	}
	if f.Queue != "" {
		sb.WriteString(" AND j.queue = ?")
		args = append(args, f.Queue)
	}
	if f.WireName != "" {
		sb.WriteString(" AND j.wire_name = ?")
		args = append(args, f.WireName)
	}
	if !f.CreatedFrom.IsZero() {
		sb.WriteString(" AND j.created_at >= ?")
		args = append(args, micros(f.CreatedFrom))
	}
	if !f.CreatedTo.IsZero() {
		sb.WriteString(" AND j.created_at < ?")
		args = append(args, micros(f.CreatedTo))
	}
	for _, t := range job.NormalizeTags(f.Tags) {
		sb.WriteString(s.schema.Rename(" AND j.id IN (SELECT job_id FROM backwave_job_tag WHERE key = ? AND value = ?)"))
		args = append(args, t.Key, t.Value)
	}
	return sb.String(), args
}

// JobList returns the jobs matching p's filter, newest id first, at most
// p.PageLimit() of them, starting below p.BeforeID when it is set. The
// keyset walk runs down the primary key (or a partial index for a settled
// state or the Retrying view), so a page costs the same at any table size.
func (s *Store) JobList(ctx context.Context, p store.JobListParams) ([]job.Job, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	cond, args := s.where(p.JobFilter)
	query := s.schema.Rename(`SELECT `+jobColumns+` FROM backwave_job j`) + cond
	if p.BeforeID > 0 {
		query += " AND j.id < ?"
		args = append(args, int64(p.BeforeID))
	}
	query += " ORDER BY j.id DESC LIMIT ?"
	args = append(args, p.PageLimit())
	var out []job.Job
	err := s.read(ctx, "list jobs", func(tx *sql.Tx) error {
		var err error
		out, err = s.scanJobs(ctx, tx, query, args...)
		return err
	})
	return out, err
}

// JobCountByQueue counts jobs per Queue and state from the counters the
// triggers keep (migration 0002), ordered by Queue then state.
func (s *Store) JobCountByQueue(ctx context.Context) ([]store.QueueStateCount, error) {
	var out []store.QueueStateCount
	err := s.read(ctx, "count jobs by queue", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.m.countQueues)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var c store.QueueStateCount
			var code int64
			if err := rows.Scan(&c.Queue, &code, &c.Count); err != nil {
				return err
			}
			if c.State, err = decode(stateCodes, "state", code); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, err
}

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

// AuditList returns the audit trail, newest entry first, filtered and paged
// by p.
func (s *Store) AuditList(ctx context.Context, p store.AuditListParams) ([]store.AuditEntry, error) {
	var out []store.AuditEntry
	err := s.read(ctx, "list audit", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.m.auditList, int64(p.JobID), p.Queue, p.BeforeID, p.PageLimit())
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var e store.AuditEntry
			var at, id int64
			var actor, action string
			if err := rows.Scan(&e.ID, &at, &actor, &action, &id, &e.Queue, &e.Detail); err != nil {
				return err
			}
			e.At, e.Actor, e.JobID = fromMicros(at), store.Actor(actor), job.ID(id)
			if e.Action, err = store.ParseAuditAction(action); err != nil {
				return fmt.Errorf("audit entry %d: %w", e.ID, err)
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, err
}
