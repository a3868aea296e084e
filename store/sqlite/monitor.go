package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobGet returns one job, or an error wrapping store.ErrNotFound.
func (s *Store) JobGet(ctx context.Context, id job.ID) (job.Job, error) {
	var out job.Job
	err := s.read(ctx, "get job", func(tx *sql.Tx) error {
		jobs, err := s.scanJobs(ctx, tx, s.q.jobGet, int64(id))
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return fmt.Errorf("job %d: %w", id, store.ErrNotFound)
		}
		out = jobs[0]
		return nil
	})
	return out, err
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

// JobCountByState counts jobs per state, in p.Queue only if it is set.
// States with no jobs are absent from the map.
func (s *Store) JobCountByState(ctx context.Context, p store.CountParams) (map[job.State]int, error) {
	out := make(map[job.State]int)
	err := s.read(ctx, "count jobs", func(tx *sql.Tx) error {
		var rows *sql.Rows
		var err error
		if p.Queue == "" {
			rows, err = tx.QueryContext(ctx, s.q.countByState)
		} else {
			rows, err = tx.QueryContext(ctx, s.q.countInQueue, p.Queue)
		}
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var code int64
			var n int
			if err := rows.Scan(&code, &n); err != nil {
				return err
			}
			st, err := decode(stateCodes, "state", code)
			if err != nil {
				return err
			}
			out[st] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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

// exists fails with store.ErrNotFound unless the job exists.
func (s *Store) exists(ctx context.Context, tx *sql.Tx, id job.ID) error {
	var state, attempt int64
	err := tx.QueryRowContext(ctx, s.q.jobState, int64(id)).Scan(&state, &attempt)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	return err
}

// scanJobs runs a query selecting jobColumns and returns its jobs in row
// order with their payloads and Tags.
func (s *Store) scanJobs(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]job.Job, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	jobs, err := scanRows(rows)
	if err != nil {
		return nil, err
	}
	if err := s.attach(ctx, tx, jobs); err != nil {
		return nil, err
	}
	return jobs, nil
}

// scanRows reads every row of jobColumns and closes rows.
func scanRows(rows *sql.Rows) ([]job.Job, error) {
	defer func() { _ = rows.Close() }()
	var out []job.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// scanJob reads one row of jobColumns.
func scanJob(rows *sql.Rows) (job.Job, error) {
	var (
		j                                              job.Job
		id, state, attempt, scheduled, created, rc, cc int64
		finalized, leaseExpires                        sql.NullInt64
		worker                                         sql.NullString
		cancelRequested                                bool
		attemptBase                                    int64
		key, terminal                                  sql.NullString
	)
	err := rows.Scan(&id, &j.Queue, &j.WireName, &state, &attempt, &j.MaxAttempts, &scheduled, &created,
		&finalized, &rc, &cc, &worker, &leaseExpires, &cancelRequested, &attemptBase, &j.Snoozes, &key, &terminal)
	if err != nil {
		return j, err
	}
	j.ConcurrencyKey = key.String
	j.ID, j.Attempt, j.AttemptBase = job.ID(id), job.Attempt(attempt), job.Attempt(attemptBase)
	j.ScheduledAt, j.CreatedAt = fromMicros(scheduled), fromMicros(created)
	if finalized.Valid {
		j.FinalizedAt = fromMicros(finalized.Int64)
	}
	if leaseExpires.Valid {
		j.LeaseExpiresAt = fromMicros(leaseExpires.Int64)
	}
	j.Worker = job.WorkerID(worker.String)
	j.CancelRequested = cancelRequested
	if j.State, err = decode(stateCodes, "state", state); err != nil {
		return j, err
	}
	if j.RetryCause, err = decode(retryCauseCodes, "retry cause", rc); err != nil {
		return j, err
	}
	if j.CancelCause, err = decode(cancelCauseCodes, "cancel cause", cc); err != nil {
		return j, err
	}
	if j.TerminalCause, err = job.ParseTerminalCause(terminal.String); err != nil {
		return j, fmt.Errorf("sqlite: job %d: %w", id, err)
	}
	return j, nil
}

// indexJobs maps each job's id to its index in jobs, and encodes the ids
// as a JSON array for json_each(?).
func indexJobs(jobs []job.Job) (index map[job.ID]int, ids string) {
	index = make(map[job.ID]int, len(jobs))
	for i := range jobs {
		index[jobs[i].ID] = i
	}
	return index, jobIDs(jobs)
}

// attach reads the payloads and Tags of jobs, two queries for the whole
// batch.
func (s *Store) attach(ctx context.Context, tx *sql.Tx, jobs []job.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	index, arg := indexJobs(jobs)
	rows, err := tx.QueryContext(ctx, s.q.payloadsOf, arg)
	if err != nil {
		return fmt.Errorf("read payloads: %w", err)
	}
	for rows.Next() {
		var id int64
		var payload []byte
		if err := rows.Scan(&id, &payload); err != nil {
			_ = rows.Close()
			return fmt.Errorf("read payloads: %w", err)
		}
		jobs[index[job.ID(id)]].Payload = payload
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read payloads: %w", err)
	}
	if err := s.attachTraces(ctx, tx, jobs, index, arg); err != nil {
		return err
	}
	if err := s.attachProgress(ctx, tx, jobs, index, arg); err != nil {
		return err
	}
	if err := s.attachCursors(ctx, tx, jobs, index, arg); err != nil {
		return err
	}
	return s.attachTags(ctx, tx, jobs, index, arg, func(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
		return tx.QueryContext(ctx, query, args...)
	})
}

// attachTags reads the Tags of jobs in one query run by query; index maps a
// job's id to its place in jobs, ids is the JSON array of their ids.
func (s *Store) attachTags(ctx context.Context, tx *sql.Tx, jobs []job.Job, index map[job.ID]int, ids string,
	query func(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error)) error {
	rows, err := query(ctx, tx, s.q.tagsOf, ids)
	if err != nil {
		return fmt.Errorf("read tags: %w", err)
	}
	for rows.Next() {
		var id int64
		var t job.Tag
		if err := rows.Scan(&id, &t.Key, &t.Value); err != nil {
			_ = rows.Close()
			return fmt.Errorf("read tags: %w", err)
		}
		j := &jobs[index[job.ID(id)]]
		j.Tags = append(j.Tags, t)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read tags: %w", err)
	}
	return nil
}

// jsonArray encodes values as a JSON array for json_each(?).
func jsonArray[T int64 | string](values []T) string {
	b, err := json.Marshal(values)
	if err != nil {
		panic(fmt.Sprintf("sqlite: encode %v: %v", values, err))
	}
	return string(b)
}
