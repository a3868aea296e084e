package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

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
// store.TransitionLogCap.
func (s *Store) trimLog(ctx context.Context, tx *sql.Tx, id int64) error {
	if _, err := tx.ExecContext(ctx, s.m.trim, id, store.TransitionLogCap); err != nil {
		return fmt.Errorf("job %d: trim the transition log: %w", id, err)
	}
	return nil
}

// knowTags adds tags to Tag Suggest's dictionary through st (the prepared
// m.knowTag statement).
func knowTags(ctx context.Context, st *sql.Stmt, tags []job.Tag) error {
	for _, t := range tags {
		if _, err := st.ExecContext(ctx, t.Key, t.Value, store.FoldTag(t), t.String()); err != nil {
			return fmt.Errorf("tag %s: %w", t, err)
		}
	}
	return nil
}
