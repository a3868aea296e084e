package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// A job's Cursor lives in backwave_job_cursor (migrations/0015_cursor.sql),
// one row per job whose handler saved one, written by the renewal or the
// outcome that carried it and read with the job.
const (
	// sqlCursorSet stores job ?1's Cursor saved by Attempt ?2: value ?3,
	// at ?4.
	sqlCursorSet = `INSERT INTO backwave_job_cursor (job_id, attempt, value, at) VALUES (?1, ?2, ?3, ?4)
	ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, value = excluded.value, at = excluded.at`
	// sqlCursorOf reads the Cursors of the jobs in the JSON array ?.
	sqlCursorOf = `SELECT job_id, attempt, value, at FROM backwave_job_cursor
	WHERE job_id IN (SELECT value FROM json_each(?))`
)

// setCursor stores, in tx, value as the Cursor of l's job saved by l's
// Attempt at at (microseconds). The caller has checked the fence.
func (s *Store) setCursor(ctx context.Context, tx *sql.Tx, l job.Lease, value []byte, at int64) error {
	if _, err := s.exec(ctx, tx, s.schema.Rename(sqlCursorSet), int64(l.ID), int64(l.Attempt), value, at); err != nil {
		return fmt.Errorf("cursor of %s: %w", l, err)
	}
	return nil
}

// setRenewedCursors stores, in tx, the Cursor of each Lease the renewal
// renewed (out answers p.Leases in order); a lost Lease's Cursor is kept
// out by the fence.
func (s *Store) setRenewedCursors(ctx context.Context, tx *sql.Tx, p store.RenewParams, out []store.RenewResult, at int64) error {
	if len(p.Cursors) == 0 {
		return nil
	}
	renewed := make(map[job.Lease]bool, len(out))
	for _, r := range out {
		if r.Status != store.RenewLost {
			renewed[r.Lease] = true
		}
	}
	for _, c := range p.Cursors {
		if !renewed[c.Lease] {
			continue
		}
		if err := s.setCursor(ctx, tx, c.Lease, c.Value, at); err != nil {
			return err
		}
	}
	return nil
}

// attachCursors reads the Cursors of jobs, whose ids ids encodes as a JSON
// array and index maps to their place in jobs.
func (s *Store) attachCursors(ctx context.Context, tx *sql.Tx, jobs []job.Job, index map[job.ID]int, ids string) error {
	rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlCursorOf), ids)
	if err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	for rows.Next() {
		var id, attempt, at int64
		var c job.Cursor
		if err := rows.Scan(&id, &attempt, &c.Value, &at); err != nil {
			_ = rows.Close()
			return fmt.Errorf("read cursors: %w", err)
		}
		c.Attempt, c.At = job.Attempt(attempt), fromMicros(at)
		if c.Value == nil {
			c.Value = []byte{}
		}
		jobs[index[job.ID(id)]].Cursor = &c
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	return nil
}

// cursorOf decodes the Cursor columns a claim read beside a job.
func cursorOf(attempt sql.NullInt64, value []byte, at sql.NullInt64) *job.Cursor {
	if !attempt.Valid {
		return nil
	}
	if value == nil {
		value = []byte{}
	}
	return &job.Cursor{Attempt: job.Attempt(attempt.Int64), Value: value, At: fromMicros(at.Int64)}
}
