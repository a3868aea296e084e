package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

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

// JobTransitions returns the job's Transition Log, oldest entry first: one
// entry per state change since insert. It fails with store.ErrNotFound for
// an unknown job.
func (s *Store) JobTransitions(ctx context.Context, id job.ID) ([]store.Transition, error) {
	var out []store.Transition
	err := s.read(ctx, "read transitions", func(tx *sql.Tx) error {
		if err := s.exists(ctx, tx, id); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, s.q.transitions, int64(id))
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var at, from, to, via, attempt int64
			var tr store.Transition
			if err := rows.Scan(&at, &from, &to, &via, &attempt, &tr.FailureDetail); err != nil {
				return err
			}
			tr.At, tr.Attempt = fromMicros(at), job.Attempt(attempt)
			if tr.From, err = decode(stateCodes, "state", from); err != nil {
				return err
			}
			if tr.State, err = decode(stateCodes, "state", to); err != nil {
				return err
			}
			if tr.Via, err = decode(viaCodes, "via", via); err != nil {
				return err
			}
			out = append(out, tr)
		}
		return rows.Err()
	})
	return out, err
}

// JobOutput returns the Job Output the job's applied outcome stored, or nil
// if none was. It fails with store.ErrNotFound for an unknown job.
func (s *Store) JobOutput(ctx context.Context, id job.ID) ([]byte, error) {
	var out []byte
	err := s.read(ctx, "read output", func(tx *sql.Tx) error {
		if err := s.exists(ctx, tx, id); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, s.q.output, int64(id)).Scan(&out)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
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
	)
	err := rows.Scan(&id, &j.Queue, &j.WireName, &state, &attempt, &j.MaxAttempts, &scheduled, &created,
		&finalized, &rc, &cc, &worker, &leaseExpires, &cancelRequested, &attemptBase)
	if err != nil {
		return j, err
	}
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
	return j, nil
}

// attach reads the payloads and Tags of jobs, two queries for the whole
// batch.
func (s *Store) attach(ctx context.Context, tx *sql.Tx, jobs []job.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	index := make(map[job.ID]int, len(jobs))
	ids := make([]int64, len(jobs))
	for i := range jobs {
		index[jobs[i].ID] = i
		ids[i] = int64(jobs[i].ID)
	}
	arg := jsonArray(ids)
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
