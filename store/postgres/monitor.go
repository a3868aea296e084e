package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobGet returns the job, or an error wrapping store.ErrNotFound.
func (s *Store) JobGet(ctx context.Context, id job.ID) (job.Job, error) {
	if err := s.enter(ctx); err != nil {
		return job.Job{}, err
	}
	jobs, err := s.jobs(ctx, `SELECT `+jobColumns+` FROM backwave.job j WHERE j.id = $1`, int64(id))
	if err != nil {
		return job.Job{}, s.wrap(fmt.Sprintf("get job %d", id), err)
	}
	if len(jobs) == 0 {
		return job.Job{}, fmt.Errorf("postgres: job %d: %w", id, store.ErrNotFound)
	}
	return jobs[0], nil
}

// jobIn reads one job through q.
func (s *Store) jobIn(ctx context.Context, q querier, id job.ID) (job.Job, error) {
	var out job.Job
	found := false
	err := q.query(ctx, s.sql(`SELECT `+jobColumns+` FROM backwave.job j WHERE j.id = $1`), []any{int64(id)}, func(scan scanFunc) error {
		var r jobRow
		if err := scan(r.dest()...); err != nil {
			return err
		}
		var err error
		out, err = r.job()
		found = true
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	return out, err
}

// jobs runs a query selecting jobColumns.
func (s *Store) jobs(ctx context.Context, query string, args ...any) ([]job.Job, error) {
	var out []job.Job
	err := s.db.query(ctx, s.sql(query), args, func(scan scanFunc) error {
		var r jobRow
		if err := scan(r.dest()...); err != nil {
			return err
		}
		j, err := r.job()
		if err != nil {
			return err
		}
		out = append(out, j)
		return nil
	})
	return out, err
}

// JobList returns the jobs matching p's filter, newest id first, at most
// p.PageLimit() of them, starting below p.BeforeID when it is set: a keyset
// walk down the primary key (or a partial index), the same cost at any
// table size.
func (s *Store) JobList(ctx context.Context, p store.JobListParams) ([]job.Job, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	cond, args := where(p.JobFilter, nil)
	query := `SELECT ` + jobColumns + ` FROM backwave.job j` + cond
	if p.BeforeID > 0 {
		args = append(args, int64(p.BeforeID))
		query += " AND j.id < $" + strconv.Itoa(len(args)) + "::bigint"
	}
	args = append(args, int32(p.PageLimit()))
	query += " ORDER BY j.id DESC LIMIT $" + strconv.Itoa(len(args)) + "::int"
	jobs, err := s.jobs(ctx, query, args...)
	if err != nil {
		return nil, s.wrap("list jobs", err)
	}
	return jobs, nil
}

// where renders f as SQL conditions on the job table aliased j, numbering
// parameters from len(args)+1. States are literal names, so a single-state
// filter on a settled state, or the Retrying view, meets its partial index.
func where(f store.JobFilter, args []any) (string, []any) {
	var sb strings.Builder
	sb.WriteString(" WHERE true")
	param := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(f.States) > 0 {
		names := make([]string, 0, len(f.States))
		for _, st := range f.States {
			names = append(names, "'"+st.String()+"'") // fixed names, no quotes inside
		}
		if len(names) == 1 {
			sb.WriteString(" AND j.state = " + names[0])
		} else {
			sb.WriteString(" AND j.state IN (" + strings.Join(names, ", ") + ")")
		}
	}
	if f.Retrying {
		sb.WriteString(" AND j.state = 'scheduled' AND j.retry_cause <> ''")
	}
	if f.Queue != "" {
		sb.WriteString(" AND j.queue = " + param(f.Queue) + "::text")
	}
	if f.WireName != "" {
		sb.WriteString(" AND j.wire_name = " + param(f.WireName) + "::text")
	}
	if !f.CreatedFrom.IsZero() {
		sb.WriteString(" AND j.created_at >= " + param(f.CreatedFrom) + "::timestamptz")
	}
	if !f.CreatedTo.IsZero() {
		sb.WriteString(" AND j.created_at < " + param(f.CreatedTo) + "::timestamptz")
	}
	for _, t := range job.NormalizeTags(f.Tags) {
		sb.WriteString(" AND j.id IN (SELECT g.job_id FROM backwave.job_tag g WHERE g.key = " + param(t.Key) +
			"::text AND g.value = " + param(t.Value) + "::text)")
	}
	return sb.String(), args
}

// countsSQL sums the folded counters and the deltas not yet folded, in one
// snapshot (migration 002).
const countsSQL = `SELECT c.queue, c.state, sum(c.n)::bigint FROM (
    SELECT queue, state, n FROM backwave.job_count
    UNION ALL
    SELECT queue, state, n FROM backwave.job_count_delta
) c GROUP BY c.queue, c.state HAVING sum(c.n) <> 0`

// foldSQL moves the count deltas into the counters, one fold at a time
// (a try-lock: a fold already running makes this one a no-op).
const foldSQL = `WITH lock AS (SELECT pg_try_advisory_xact_lock(hashtext('backwave.job_count')) AS ok),
moved AS (
    DELETE FROM backwave.job_count_delta d WHERE (SELECT ok FROM lock) RETURNING d.queue, d.state, d.n
)
INSERT INTO backwave.job_count AS c (queue, state, n)
SELECT m.queue, m.state, sum(m.n) FROM moved m GROUP BY m.queue, m.state ORDER BY m.queue, m.state
ON CONFLICT (queue, state) DO UPDATE SET n = c.n + excluded.n`

// foldCounts folds the count deltas; LeaseExpire calls it, so deltas stay
// few while any node runs maintenance.
func (s *Store) foldCounts(ctx context.Context) error {
	if _, err := s.db.exec(ctx, s.sql(foldSQL)); err != nil {
		return err
	}
	if _, err := s.db.exec(ctx, s.sql(keyFoldSQL)); err != nil {
		return err
	}
	return s.foldWorkflowCounts(ctx)
}

// JobCountByQueue counts jobs per Queue and state from the counters,
// ordered by Queue (byte order) then state.
func (s *Store) JobCountByQueue(ctx context.Context) ([]store.QueueStateCount, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	var out []store.QueueStateCount
	err := s.db.query(ctx, s.sql(countsSQL), nil, func(scan scanFunc) error {
		var c store.QueueStateCount
		var state string
		var n int64
		if err := scan(&c.Queue, &state, &n); err != nil {
			return err
		}
		var err error
		if c.State, err = job.ParseState(state); err != nil {
			return err
		}
		c.Count = int(n)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, s.wrap("count jobs by queue", err)
	}
	slices.SortFunc(out, func(a, b store.QueueStateCount) int {
		if c := strings.Compare(a.Queue, b.Queue); c != 0 {
			return c
		}
		return cmp.Compare(a.State, b.State)
	})
	return out, nil
}

// JobCountByState counts jobs per state, in p.Queue only if it is set, from
// the counters. States with no jobs are absent from the map.
func (s *Store) JobCountByState(ctx context.Context, p store.CountParams) (map[job.State]int, error) {
	all, err := s.JobCountByQueue(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[job.State]int)
	for _, c := range all {
		if p.Queue == "" || c.Queue == p.Queue {
			out[c.State] += c.Count
		}
	}
	return out, nil
}

// AuditList returns the audit trail, newest entry first, filtered and paged
// by p.
func (s *Store) AuditList(ctx context.Context, p store.AuditListParams) ([]store.AuditEntry, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	var out []store.AuditEntry
	err := s.db.query(ctx, s.sql(`SELECT a.id, a.at, a.actor, a.action, coalesce(a.job_id, 0), a.queue, a.detail
FROM backwave.audit a
WHERE ($1::bigint = 0 OR a.job_id = $1::bigint) AND ($2::text = '' OR a.queue = $2::text) AND ($3::bigint = 0 OR a.id < $3::bigint)
ORDER BY a.id DESC LIMIT $4::int`), []any{int64(p.JobID), p.Queue, p.BeforeID, int32(p.PageLimit())}, func(scan scanFunc) error {
		var e store.AuditEntry
		var actor, action string
		if err := scan(&e.ID, &e.At, &actor, &action, &e.JobID, &e.Queue, &e.Detail); err != nil {
			return err
		}
		e.At, e.Actor = e.At.UTC(), store.Actor(actor)
		var err error
		if e.Action, err = store.ParseAuditAction(action); err != nil {
			return fmt.Errorf("audit entry %d: %w", e.ID, err)
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, s.wrap("list audit", err)
	}
	return out, nil
}
