package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Progress lives in backwave_job_progress (migrations/0007_trace_progress.sql),
// one row per job whose handler reported some, written by the renewal that
// carried it and read with the job.
const (
	// sqlProgressSet stores job ?1's progress of Attempt ?2: fraction ?3,
	// note ?4, at ?5.
	sqlProgressSet = `INSERT INTO backwave_job_progress (job_id, attempt, fraction, note, at) VALUES (?1, ?2, ?3, ?4, ?5)
	ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, fraction = excluded.fraction,
		note = excluded.note, at = excluded.at`
	// sqlProgressOf reads the progress of the jobs in the JSON array ?.
	sqlProgressOf = `SELECT job_id, attempt, fraction, note, at FROM backwave_job_progress
	WHERE job_id IN (SELECT value FROM json_each(?))`
)

// setProgress stores, in tx, the progress of each Lease the renewal renewed
// (out answers p.Leases in order), stamped at (the store's now, in
// microseconds).
func (s *Store) setProgress(ctx context.Context, tx *sql.Tx, p store.RenewParams, out []store.RenewResult, at int64) error {
	for _, pr := range p.Progress {
		renewed := false
		for i, l := range p.Leases {
			if l == pr.Lease && out[i].Status != store.RenewLost {
				renewed = true
				break
			}
		}
		if !renewed {
			continue // lost: the fence keeps it out
		}
		if _, err := s.exec(ctx, tx, s.schema.Rename(sqlProgressSet), int64(pr.Lease.ID), int64(pr.Lease.Attempt),
			pr.Fraction, pr.Note, at); err != nil {
			return fmt.Errorf("progress of %s: %w", pr.Lease, err)
		}
	}
	return nil
}

// attachProgress reads the progress of jobs, whose ids ids encodes as a
// JSON array and index maps to their place in jobs.
func (s *Store) attachProgress(ctx context.Context, tx *sql.Tx, jobs []job.Job, index map[job.ID]int, ids string) error {
	rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlProgressOf), ids)
	if err != nil {
		return fmt.Errorf("read progress: %w", err)
	}
	for rows.Next() {
		var id, attempt, at int64
		var pr job.Progress
		if err := rows.Scan(&id, &attempt, &pr.Fraction, &pr.Note, &at); err != nil {
			_ = rows.Close()
			return fmt.Errorf("read progress: %w", err)
		}
		pr.Attempt, pr.At = job.Attempt(attempt), fromMicros(at)
		jobs[index[job.ID(id)]].Progress = &pr
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read progress: %w", err)
	}
	return nil
}

// progressOf decodes the progress columns a claim read beside a job.
func progressOf(attempt sql.NullInt64, fraction sql.NullFloat64, note sql.NullString, at sql.NullInt64) *job.Progress {
	if !attempt.Valid {
		return nil
	}
	return &job.Progress{Attempt: job.Attempt(attempt.Int64), Fraction: fraction.Float64, Note: note.String, At: fromMicros(at.Int64)}
}
