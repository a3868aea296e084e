package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobGet returns one job or store.ErrNotFound (store.Monitor).
func (s *Store) JobGet(ctx context.Context, id job.ID) (job.Job, error) {
	var out job.Job
	err := s.read(ctx, "get job", func(q querier, _ time.Time) error {
		r, err := scanJob(q.QueryRowContext(ctx, `SELECT `+jobCols+` FROM backwave_job j WHERE j.id = ?`, int64(id)))
		if err != nil {
			return notFound(err, id)
		}
		jobs := []job.Job{r.job}
		if err := loadTags(q, ctx, jobs); err != nil {
			return err
		}
		out = jobs[0]
		return nil
	})
	return out, err
}

// filterSQL appends the WHERE conditions of f on job alias j.
func filterSQL(b *strings.Builder, args []any, f store.JobFilter) []any {
	if len(f.States) > 0 {
		b.WriteString(` AND j.state IN (`)
		for i, st := range f.States {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('?')
			args = append(args, stateCode(st))
		}
		b.WriteString(`)`)
	}
	if f.Queue != "" {
		b.WriteString(` AND j.queue = ?`)
		args = append(args, f.Queue)
	}
	if f.WireName != "" {
		b.WriteString(` AND j.wire_name = ?`)
		args = append(args, f.WireName)
	}
	for _, t := range f.Tags {
		b.WriteString(` AND EXISTS (SELECT 1 FROM backwave_job_tag ft WHERE ft.job_id = j.id AND ft.k = ? AND ft.v = ?)`)
		args = append(args, t.Key, t.Value)
	}
	if f.Retrying {
		b.WriteString(` AND j.state = 1 AND j.retry_cause <> 0`)
	}
	if !f.CreatedFrom.IsZero() {
		b.WriteString(` AND j.created_at >= ?`)
		args = append(args, micros(f.CreatedFrom))
	}
	if !f.CreatedTo.IsZero() {
		b.WriteString(` AND j.created_at < ?`)
		args = append(args, micros(f.CreatedTo))
	}
	return args
}

// JobList returns jobs matching the filter, newest id first, one page at a
// time (store.Monitor).
func (s *Store) JobList(ctx context.Context, p store.JobListParams) ([]job.Job, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []job.Job
	err := s.read(ctx, "list jobs", func(q querier, _ time.Time) error {
		out = nil
		var b strings.Builder
		var args []any
		b.WriteString(`SELECT ` + jobCols + ` FROM backwave_job j WHERE j.state <> 0`)
		if p.BeforeID > 0 {
			b.WriteString(` AND j.id < ?`)
			args = append(args, int64(p.BeforeID))
		}
		args = filterSQL(&b, args, p.JobFilter)
		b.WriteString(` ORDER BY j.id DESC LIMIT ?`)
		args = append(args, p.PageLimit())
		rows, err := q.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			r, err := scanJob(rows)
			if err != nil {
				_ = rows.Close()
				return err
			}
			out = append(out, r.job)
		}
		_ = rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return loadTags(q, ctx, out)
	})
	return out, err
}

// JobCountByState counts jobs per state from the counts the store keeps
// (store.Monitor).
func (s *Store) JobCountByState(ctx context.Context, p store.CountParams) (map[job.State]int, error) {
	out := map[job.State]int{}
	err := s.read(ctx, "count jobs", func(q querier, _ time.Time) error {
		query := `SELECT state, SUM(n) FROM backwave_job_count GROUP BY state HAVING SUM(n) <> 0`
		var args []any
		if p.Queue != "" {
			query = `SELECT state, n FROM backwave_job_count WHERE queue = ? AND n <> 0`
			args = append(args, p.Queue)
		}
		rows, err := q.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var st, n int64
			if err := rows.Scan(&st, &n); err != nil {
				return err
			}
			state, err := decode(stateCodes, "state", st)
			if err != nil {
				return err
			}
			out[state] = int(n)
		}
		return rows.Err()
	})
	return out, err
}

// JobCountByQueue counts jobs per Queue and state (store.Monitor).
func (s *Store) JobCountByQueue(ctx context.Context) ([]store.QueueStateCount, error) {
	var out []store.QueueStateCount
	err := s.read(ctx, "count jobs by queue", func(q querier, _ time.Time) error {
		out = nil
		rows, err := q.QueryContext(ctx, `SELECT queue, state, n FROM backwave_job_count WHERE n <> 0 ORDER BY queue, state`)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var c store.QueueStateCount
			var st int64
			if err := rows.Scan(&c.Queue, &st, &c.Count); err != nil {
				return err
			}
			if c.State, err = decode(stateCodes, "state", st); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	slices.SortStableFunc(out, func(a, b store.QueueStateCount) int {
		if c := strings.Compare(a.Queue, b.Queue); c != 0 {
			return c
		}
		return int(a.State) - int(b.State)
	})
	return out, err
}

// TagFacet returns the Tag Facet of the filtered slice (store.Monitor).
func (s *Store) TagFacet(ctx context.Context, p store.TagFacetParams) ([]store.TagCount, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.TagCount
	err := s.read(ctx, "tag facet", func(q querier, _ time.Time) error {
		out = nil
		var b strings.Builder
		b.WriteString(`SELECT t.k, t.v, COUNT(*) FROM backwave_job_tag t JOIN backwave_job j ON j.id = t.job_id WHERE j.state <> 0`)
		args := filterSQL(&b, nil, p.JobFilter)
		b.WriteString(` GROUP BY t.k, t.v`)
		rows, err := q.QueryContext(ctx, b.String(), args...)
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
	slices.SortFunc(out, store.CompareTagCounts)
	return out[:min(len(out), p.BucketLimit())], err
}

// TagSuggest completes a prefix over every Tag a stored job carries
// (store.Monitor).
func (s *Store) TagSuggest(ctx context.Context, p store.TagSuggestParams) ([]job.Tag, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	prefix := store.FoldPrefix(p.Prefix)
	var out []job.Tag
	err := s.read(ctx, "suggest tags", func(q querier, _ time.Time) error {
		out = nil
		rows, err := q.QueryContext(ctx, `SELECT DISTINCT k, v FROM backwave_job_tag`)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var t job.Tag
			if err := rows.Scan(&t.Key, &t.Value); err != nil {
				return err
			}
			if strings.HasPrefix(store.FoldTag(t), prefix) {
				out = append(out, t)
			}
		}
		return rows.Err()
	})
	slices.SortFunc(out, store.CompareSuggestions)
	return out[:min(len(out), p.SuggestLimit())], err
}

// AuditList returns the audit trail, newest first (store.Monitor).
func (s *Store) AuditList(ctx context.Context, p store.AuditListParams) ([]store.AuditEntry, error) {
	var out []store.AuditEntry
	err := s.read(ctx, "list audit", func(q querier, _ time.Time) error {
		out = nil
		var b strings.Builder
		var args []any
		b.WriteString(`SELECT id, at, actor, action, job_id, queue, detail FROM backwave_audit WHERE 1 = 1`)
		if p.BeforeID > 0 {
			b.WriteString(` AND id < ?`)
			args = append(args, p.BeforeID)
		}
		if p.JobID != 0 {
			b.WriteString(` AND job_id = ?`)
			args = append(args, int64(p.JobID))
		}
		if p.Queue != "" {
			b.WriteString(` AND queue = ?`)
			args = append(args, p.Queue)
		}
		b.WriteString(` ORDER BY id DESC LIMIT ?`)
		args = append(args, p.PageLimit())
		rows, err := q.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var e store.AuditEntry
			var at, jid int64
			var actor, action string
			if err := rows.Scan(&e.ID, &at, &actor, &action, &jid, &e.Queue, &e.Detail); err != nil {
				return err
			}
			if e.Action, err = store.ParseAuditAction(action); err != nil {
				return fmt.Errorf("audit entry %d: %w", e.ID, err)
			}
			e.At, e.Actor, e.JobID = fromMicros(at), store.Actor(actor), job.ID(jid)
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, err
}

// JobTransitions returns the job's Transition Log, oldest first
// (store.History).
func (s *Store) JobTransitions(ctx context.Context, id job.ID) ([]store.Transition, error) {
	var out []store.Transition
	err := s.read(ctx, "transitions", func(q querier, _ time.Time) error {
		out = nil
		var one int
		if err := q.QueryRowContext(ctx, `SELECT 1 FROM backwave_job WHERE id = ?`, int64(id)).Scan(&one); err != nil {
			return notFound(err, id)
		}
		rows, err := q.QueryContext(ctx, `SELECT at, from_state, state, via, attempt, failure_detail, seq
			FROM backwave_transition WHERE job_id = ? ORDER BY seq`, int64(id))
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var t store.Transition
			var at, from, st, via, attempt int64
			var detail sql.NullString
			if err := rows.Scan(&at, &from, &st, &via, &attempt, &detail, &t.Seq); err != nil {
				return err
			}
			t.At, t.Attempt, t.FailureDetail = fromMicros(at), job.Attempt(attempt), detail.String
			if t.From, err = decode(stateCodes, "state", from); err != nil {
				return err
			}
			if t.State, err = decode(stateCodes, "state", st); err != nil {
				return err
			}
			if t.Via, err = decode(viaCodes, "via", via); err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
}

// JobOutput returns the job's Job Output, nil when none (store.History).
func (s *Store) JobOutput(ctx context.Context, id job.ID) ([]byte, error) {
	var out []byte
	err := s.read(ctx, "output", func(q querier, _ time.Time) error {
		var present bool
		if err := q.QueryRowContext(ctx, `SELECT output, output IS NOT NULL FROM backwave_job WHERE id = ?`, int64(id)).Scan(&out, &present); err != nil {
			return notFound(err, id)
		}
		if present && out == nil {
			out = []byte{}
		}
		if !present {
			out = nil
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	return out, nil
}
