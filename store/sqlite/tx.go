package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"modernc.org/sqlite"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobInsertManyTx is the Transactional Enqueue of the co-resident
// deployment: it inserts the jobs inside tx, a transaction the caller owns
// on the store's database file — begun on the *sql.DB given to OpenDB, or
// on any other connection to the file — so the jobs and the caller's
// business writes commit or roll back together. The store never commits or
// rolls back tx. The jobs become claimable when the caller commits; no
// Wake-Up Hint announces them (the store cannot see the commit, and a hint
// must never name a job that may yet roll back), so workers find them at
// their next poll. If tx rolls back the jobs never existed, and their ids
// are not handed out again: the store remembers the highest id it gave out
// in a caller's transaction and keeps every later insert above it
// (AUTOINCREMENT's own counter would roll back with tx). That memory is the
// Store's: a second Store on the file learns of the rolled-back ids only
// once this one commits an insert.
//
// Invalid params wrap store.ErrInvalidParams and touch nothing. A nil tx,
// or one that is not on the store's file (another file, an in-memory
// database, another engine), wraps store.ErrTxUnsupported; the check is one
// statement in tx. A refused or failed call inserts nothing; roll tx back
// after an error.
//
// tx should be a write transaction begun with BEGIN IMMEDIATE (the
// driver's "_txlock=immediate"), or one whose first statement is a write:
// a deferred transaction that read before it writes fails with SQLITE_BUSY
// when another connection wrote meanwhile. The database must already hold
// this store's schema (Open and OpenDB migrate it).
func (s *Store) JobInsertManyTx(ctx context.Context, tx *sql.Tx, p store.InsertManyParams) ([]job.ID, error) {
	res, err := s.insertInTx(ctx, tx, p)
	return store.ResultIDs(res), err
}

// insertInTx is JobInsertManyTx answering per job.
func (s *Store) insertInTx(ctx context.Context, tx *sql.Tx, p store.InsertManyParams) ([]store.InsertResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if tx == nil {
		return nil, fmt.Errorf("sqlite: insert jobs: %w: nil *sql.Tx", store.ErrTxUnsupported)
	}
	if err := s.checkTx(ctx, tx); err != nil {
		return nil, fmt.Errorf("sqlite: insert jobs in the caller's transaction: %w", err)
	}
	if len(p.Jobs) == 0 {
		return []store.InsertResult{}, nil
	}
	res, _, err := s.insertResults(ctx, tx, false, p)
	if err != nil {
		return nil, fmt.Errorf("sqlite: insert jobs in the caller's transaction: %w", err)
	}
	return res, nil
}

// JobInsertManyInTx implements store.TxInserter: it is JobInsertManyTx for
// a tx that must be a *sql.Tx on the store's file. Any other value wraps
// store.ErrTxUnsupported.
func (s *Store) JobInsertManyInTx(ctx context.Context, tx any, p store.InsertManyParams) ([]job.ID, error) {
	res, err := s.JobInsertManyResultsInTx(ctx, tx, p)
	return store.ResultIDs(res), err
}

// JobInsertManyResultsInTx implements store.TxInserter: it is
// JobInsertManyInTx answering per job, as JobInsertManyResults does.
func (s *Store) JobInsertManyResultsInTx(ctx context.Context, tx any, p store.InsertManyParams) ([]store.InsertResult, error) {
	t, ok := tx.(*sql.Tx)
	if !ok {
		return nil, fmt.Errorf("sqlite: insert jobs: %w: a transaction of type %T; the Embedded Adapter takes a *sql.Tx on its file %s",
			store.ErrTxUnsupported, tx, s.path)
	}
	return s.insertInTx(ctx, t, p)
}

// JobRescheduleInTx implements store.TxInserter: it is JobRescheduleTx for
// a tx that must be a *sql.Tx on the store's file. Any other value, and a
// transaction on another file, wraps store.ErrTxUnsupported.
func (s *Store) JobRescheduleInTx(ctx context.Context, tx any, p store.JobRescheduleParams) (job.Job, error) {
	t, ok := tx.(*sql.Tx)
	if !ok || t == nil {
		return job.Job{}, fmt.Errorf("sqlite: reschedule job: %w: a transaction of type %T; the Embedded Adapter takes a *sql.Tx on its file %s",
			store.ErrTxUnsupported, tx, s.path)
	}
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	if err := s.ready(ctx); err != nil {
		return job.Job{}, err
	}
	if err := s.checkTx(ctx, t); err != nil {
		return job.Job{}, fmt.Errorf("sqlite: reschedule job %d: %w", p.ID, err)
	}
	return s.JobRescheduleTx(ctx, t, p)
}

// checkTx fails, wrapping store.ErrTxUnsupported, unless tx is on the
// store's database file. A statement that fails with SQLite's own error
// (or on a done context) is reported as it is; one that fails otherwise
// means tx is not on a SQLite database at all.
func (s *Store) checkTx(ctx context.Context, tx *sql.Tx) error {
	var file string
	err := tx.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file)
	var se *sqlite.Error
	switch {
	case err == nil:
	case ctx.Err() != nil, errors.Is(err, sql.ErrTxDone), errors.As(err, &se):
		return fmt.Errorf("check the transaction's database: %w", err)
	default:
		return fmt.Errorf("%w: the transaction is not on a SQLite database (%w)", store.ErrTxUnsupported, err)
	}
	if file == "" {
		return fmt.Errorf("%w: the transaction is on an in-memory or temporary database, not the store's file %s", store.ErrTxUnsupported, s.path)
	}
	mine, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("check the transaction's database: %w", err)
	}
	theirs, err := os.Stat(file)
	if err != nil || !os.SameFile(mine, theirs) {
		return fmt.Errorf("%w: the transaction is on %s, not the store's file %s", store.ErrTxUnsupported, file, s.path)
	}
	return nil
}
