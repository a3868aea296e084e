package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

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
			if err := rows.Scan(&at, &from, &to, &via, &attempt, &tr.FailureDetail, &tr.Seq); err != nil {
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

// logEntry writes one Transition Log entry through st (the prepared
// q.transition statement) as the Job History Policy says — nothing under
// store.HistoryOff, no Failure Detail under store.HistoryTransitions — and
// trims the job's log to store.TransitionLogCap once its Attempt could have
// outgrown it.
func (s *Store) logEntry(ctx context.Context, tx *sql.Tx, st *sql.Stmt, id int64, at, from, to, via int64, attempt job.Attempt, detail string) error {
	if !s.opts.History.Records() {
		return nil
	}
	if _, err := st.ExecContext(ctx, id, at, from, to, via, int64(attempt), nullString(s.opts.History.Detail(detail))); err != nil {
		return fmt.Errorf("job %d: transition: %w", id, err)
	}
	return s.trim(ctx, tx, id, attempt)
}

// logOne writes one Transition Log entry outside a prepared batch.
func (s *Store) logOne(ctx context.Context, tx *sql.Tx, id int64, at time.Time, from, to job.State, via core.Via, attempt job.Attempt) error {
	st, err := s.prepare(ctx, tx, s.q.transition)
	if err != nil {
		return err
	}
	defer st.close()
	return s.logEntry(ctx, tx, st[0], id, micros(at), stateCode(from), stateCode(to), viaCode(via), attempt, "")
}

// trim drops the oldest entries of the job's Transition Log beyond
// store.TransitionLogCap, if its Attempt is past store.TransitionTrimAttempt
// (below it the log cannot be that long).
func (s *Store) trim(ctx context.Context, tx *sql.Tx, id int64, attempt job.Attempt) error {
	if attempt <= store.TransitionTrimAttempt {
		return nil
	}
	return s.trimLog(ctx, tx, id)
}

// trimLog drops the oldest entries of the job's Transition Log beyond
// store.TransitionLogCap, but none a live Transition Observer registration
// still awaits.
func (s *Store) trimLog(ctx context.Context, tx *sql.Tx, id int64) error {
	live := micros(s.clock.Now()) - store.ObserverRemoveAfter.Microseconds()
	if _, err := tx.ExecContext(ctx, s.m.trim, id, store.TransitionLogCap, live); err != nil {
		return fmt.Errorf("job %d: trim the transition log: %w", id, err)
	}
	return nil
}
