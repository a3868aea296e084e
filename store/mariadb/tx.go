package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobInsertManyInTx is JobInsertMany inside tx, a *sql.Tx the application
// began on the store's database, for Transactional Enqueue
// (store.TxInserter). The jobs commit or roll back with tx; the store never
// commits or rolls it back. From the insert to tx's commit, tx holds the
// writer row every writing transaction takes (see the package doc, Commit
// order), so every other write of the store waits for tx's commit: keep
// the enqueue late in the transaction and the transaction short. Every
// read the insert makes in tx is a locking read, so it sees the newest
// committed rows whatever tx's isolation level. No Wake-Up Hint announces
// the jobs; workers find them at their next poll.
//
// A tx of another type, nil, or on another server or database is refused
// with store.ErrTxUnsupported.
func (s *Store) JobInsertManyInTx(ctx context.Context, tx any, p store.InsertManyParams) ([]job.ID, error) {
	res, err := s.JobInsertManyResultsInTx(ctx, tx, p)
	return store.ResultIDs(res), err
}

// JobInsertManyResultsInTx is JobInsertManyInTx answering per job, as
// JobInsertManyResults does (store.TxInserter).
func (s *Store) JobInsertManyResultsInTx(ctx context.Context, tx any, p store.InsertManyParams) ([]store.InsertResult, error) {
	var out []store.InsertResult
	err := s.inTx(ctx, tx, "insert in transaction", p.Validate, func(w *wtx) error {
		var err error
		out, err = w.insertMany(p, 0)
		return err
	})
	return out, err
}

// WorkflowInsertInTx is WorkflowInsert inside the application's tx, as
// JobInsertManyInTx.
func (s *Store) WorkflowInsertInTx(ctx context.Context, tx any, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	var res store.WorkflowInsertResult
	err := s.inTx(ctx, tx, "insert workflow in transaction", p.Validate, func(w *wtx) error {
		var err error
		res, err = w.workflowInsert(p)
		return err
	})
	return res, err
}

func (s *Store) inTx(ctx context.Context, tx any, what string, validate func() error, fn func(w *wtx) error) error {
	t, ok := tx.(*sql.Tx)
	if !ok || t == nil {
		return fmt.Errorf("mariadb: %s: %w: a %T is not a *sql.Tx", what, store.ErrTxUnsupported, tx)
	}
	if err := validate(); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	if err := s.sameDatabase(ctx, t); err != nil {
		return fmt.Errorf("mariadb: %s: %w", what, err)
	}
	w, err := s.lockWriter(ctx, lockingReads{t, s.sql})
	if err != nil {
		return s.fail(what, err)
	}
	if err := fn(w); err != nil {
		return s.fail(what, err)
	}
	if err := w.finish(); err != nil {
		return s.fail(what, err)
	}
	s.jobFloor.Raise(job.ID(w.jobSeq))
	return nil
}

// sameDatabase refuses a transaction on another server or database than
// the store's.
func (s *Store) sameDatabase(ctx context.Context, t *sql.Tx) error {
	const q = `SELECT COALESCE(DATABASE(), ''), @@hostname, @@port`
	var db, host, port, myDB, myHost, myPort string
	if err := t.QueryRowContext(ctx, q).Scan(&db, &host, &port); err != nil {
		return fmt.Errorf("%w: read the transaction's database: %v", store.ErrTxUnsupported, err)
	}
	if err := s.db.QueryRowContext(ctx, q).Scan(&myDB, &myHost, &myPort); err != nil {
		return fmt.Errorf("read the store's database: %w", err)
	}
	if db != myDB || host != myHost || port != myPort {
		return fmt.Errorf("%w: the transaction is on database %q at %s:%s, the store on %q at %s:%s",
			store.ErrTxUnsupported, db, host, port, myDB, myHost, myPort)
	}
	return nil
}

// lockingReads runs every plain SELECT as a locking read (LOCK IN SHARE
// MODE), renamed to the Schema Name: inside an application's transaction
// at REPEATABLE READ a plain SELECT would read the transaction's snapshot,
// which may predate commits made while it waited for the writer row.
type lockingReads struct {
	tx *sql.Tx
	rn renamer
}

var _ querier = lockingReads{}

func locking(q string) string {
	t := strings.TrimSpace(q)
	if !strings.HasPrefix(t, "SELECT") || strings.HasSuffix(t, "FOR UPDATE") || strings.HasSuffix(t, "LOCK IN SHARE MODE") ||
		strings.HasSuffix(t, "SKIP LOCKED") {
		return q
	}
	return t + " LOCK IN SHARE MODE"
}

func (l lockingReads) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return l.tx.ExecContext(ctx, l.rn.of(q), args...)
}

func (l lockingReads) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return l.tx.QueryContext(ctx, l.rn.of(locking(q)), args...)
}

func (l lockingReads) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return l.tx.QueryRowContext(ctx, l.rn.of(locking(q)), args...)
}
