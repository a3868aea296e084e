package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The hot statements — those of claims, outcomes, renewals, lease ends and
// inserts — are prepared once, when the store opens, on the write
// connection, and bound to each write transaction with Tx.StmtContext,
// which reuses the connection's prepared statement: a call then pays for
// no SQL parsing, which otherwise costs as much as applying a small batch.
// SQLite prepares them again by itself if another process changes the
// schema under them.

// hotQueries lists the statements prepared at Open.
func (s *Store) hotQueries() []string {
	q, m := s.q, s.m
	return []string{
		q.queueSettings, q.countRunning, q.claimDue, q.claim, q.tagsIn, q.tagsOf,
		q.renew,
		q.countDeltas, q.applyOutcomes, q.applyRetries, q.transitionsOf, q.transitionRows, q.outputsOf, q.tagRows, q.knowTagRows,
		q.lapsed, q.held, q.endLease, q.transition,
		q.insertUniform, q.insertRows, q.payloadsIn,
		q.insertJob, q.insertPayload, q.insertTag, q.knowQueue, m.knowTag,
		q.dep.insertDependent, q.dep.insertEdge, q.fleet.claimDueSkip,
	}
}

// prepareHot prepares the hot statements on the write connection.
func (s *Store) prepareHot(ctx context.Context) error {
	hot := make(map[string]*sql.Stmt)
	for _, q := range s.hotQueries() {
		if hot[q] != nil {
			continue
		}
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			_ = closeHot(hot)
			return fmt.Errorf("prepare: %w", err)
		}
		hot[q] = st
	}
	s.hot = hot
	return nil
}

// closeHot closes the prepared statements.
func closeHot(hot map[string]*sql.Stmt) error {
	var errs []error
	for _, st := range hot {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// stmt returns query as a statement of tx, which must be one of the
// store's own write transactions: the statement prepared at Open if query
// is hot, else one prepared now in tx. Either way tx closes it when it ends.
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st := s.hot[query]; st != nil {
		return tx.StmtContext(ctx, st), nil
	}
	st, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	return st, nil
}

// query runs query in tx, one of the store's own write transactions.
func (s *Store) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	st, err := s.stmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// exec runs query in tx, one of the store's own write transactions.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := s.stmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// queryRow runs query in tx, one of the store's own write transactions,
// and scans its one row into dest.
func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, query string, args []any, dest ...any) error {
	st, err := s.stmt(ctx, tx, query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}

// addCounts adds d to the Monitor's counts in tx, one of the store's own
// write transactions: the bookkeeping of a statement that flipped
// count_flip, which the count trigger left alone.
func (s *Store) addCounts(ctx context.Context, tx *sql.Tx, d countDeltas) error {
	var rows jsonRows
	for _, c := range d {
		if c.n == 0 {
			continue
		}
		rows.row()
		rows.str(c.queue)
		rows.int(c.state)
		rows.int(c.n)
	}
	if rows.len() == 0 {
		return nil
	}
	if _, err := s.exec(ctx, tx, s.q.countDeltas, rows.String()); err != nil {
		return fmt.Errorf("count: %w", err)
	}
	return nil
}
