package store

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/backwave/backwave/job"
)

// ErrTxUnsupported: a caller's transaction was handed to a store that cannot
// insert inside it — a store without the Transactional Enqueue capability,
// a transaction of a type the store does not take, a nil one, or one on
// another database. Nothing was written.
var ErrTxUnsupported = errors.New("store: the store cannot use this transaction")

// TxInserter is the Transactional Enqueue capability (glossary): inserting
// jobs inside a transaction the application owns, so that they commit or
// roll back with its business writes. An adapter that has it implements
// TxInserter beside Store; the In-Memory Store does not.
type TxInserter interface {
	// JobInsertManyInTx is JobInsertMany inside tx, a transaction the
	// caller began on the store's own database, with the same params, the
	// same validation and the same ids in input order. Which Go types tx
	// may have is the adapter's to say (a *sql.Tx, a pgx.Tx, …); the store
	// checks that tx is on its database before it writes.
	//
	// The store never commits or rolls back tx. The jobs become claimable
	// when tx commits and vanish if it rolls back; no later insert is
	// given a rolled-back job's id (job.ID: never reused). An adapter
	// whose id counter rolls back with tx keeps an IDFloor. No
	// Wake-Up Hint may announce them before the commit: an adapter whose
	// hints ride on the transaction (PostgreSQL's NOTIFY) lets them go out
	// at commit; any other announces nothing, and workers find the jobs at
	// their next poll.
	//
	// A tx the store cannot use — of another type, nil, or on another
	// database — is an error wrapping ErrTxUnsupported; invalid params wrap
	// ErrInvalidParams, as for JobInsertMany. Either way nothing is
	// inserted. After any error the caller should roll tx back: a failed
	// statement may have left it unusable.
	JobInsertManyInTx(ctx context.Context, tx any, p InsertManyParams) ([]job.ID, error)
	// JobInsertManyResultsInTx is JobInsertManyInTx answering per job, in
	// input order, as JobInsertManyResults does: the id, whether the job
	// was inserted, and whether it rewrote its key's holder instead
	// (UniqueReplace, UniqueDebounce). The rewrite commits or rolls back
	// with tx like the insert; the rest is JobInsertManyInTx.
	JobInsertManyResultsInTx(ctx context.Context, tx any, p InsertManyParams) ([]InsertResult, error)
	// JobRescheduleInTx is JobReschedule inside tx (glossary, Reschedule:
	// "It can join the caller's transaction, the same as Transactional
	// Enqueue"), with the same params, validation, audit record and errors.
	// tx is taken and checked as for JobInsertManyInTx, and the store never
	// commits or rolls it back: the new due time and its audit record
	// commit or roll back with the caller's writes. No Wake-Up Hint is sent
	// before the commit.
	JobRescheduleInTx(ctx context.Context, tx any, p JobRescheduleParams) (job.Job, error)
}

// IDFloor is the highest job id a store handed out inside callers'
// transactions, for an adapter whose id counter is an ordinary row that
// rolls back with the caller's transaction (SQLite's sqlite_sequence, a
// counter row): the adapter raises the floor after each insert in a caller's
// transaction and starts every later insert above it, so an id that rolled
// back is never handed out again by that store. The zero value is no floor;
// it is safe for concurrent use.
type IDFloor struct{ top atomic.Int64 }

// Load returns the floor, 0 if none was raised.
func (f *IDFloor) Load() int64 { return f.top.Load() }

// Raise lifts the floor to the highest of ids, if that is above it.
func (f *IDFloor) Raise(ids ...job.ID) {
	for _, id := range ids {
		for {
			cur := f.top.Load()
			if int64(id) <= cur || f.top.CompareAndSwap(cur, int64(id)) {
				break
			}
		}
	}
}
