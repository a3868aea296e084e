package backwave

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/store"
)

// Tx is a database transaction the application owns, handed to EnqueueTx
// and EnqueueManyTx for Transactional Enqueue. The adapters take:
//   - store/sqlite: a *sql.Tx on the store's database file — the
//     co-resident deployment, best with one *sql.DB for both (sqlite.OpenDB);
//   - store/postgres: a pgx.Tx, or a *sql.Tx through pgx's stdlib driver, on
//     the store's database.
//
// Tx is any value, so that this package links no database driver: a value
// the Client's store cannot use — another type, a nil transaction, one on
// another database, or any transaction at all for a store without the
// capability, such as the In-Memory Store — is refused at run time with an
// error wrapping ErrTxUnsupported, and nothing is written.
type Tx any

// ErrTxUnsupported is wrapped by EnqueueTx and EnqueueManyTx when the
// Client's store cannot insert inside the given transaction (see Tx).
// Nothing is written.
var ErrTxUnsupported = store.ErrTxUnsupported

// EnqueueTx is Enqueue inside tx, a transaction the application began on
// its store's database (glossary: Transactional Enqueue): the job commits
// or rolls back with the application's own writes in tx. See EnqueueManyTx.
func (c *Client) EnqueueTx(ctx context.Context, tx Tx, args JobArgs, opts ...EnqueueOption) (JobID, error) {
	ids, err := c.EnqueueManyTx(ctx, tx, []EnqueueParams{{Args: args, Options: opts}})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// EnqueueManyTx is EnqueueMany inside tx, a transaction the application
// began on its store's database (glossary: Transactional Enqueue), so the
// jobs and the application's business writes commit or roll back together.
// The jobs are built exactly as EnqueueMany builds them: the same defaults
// (the Client's attempt ceiling, the args type's JobOptions), the same
// options and the same checks, Dependencies within the call
// (WithParentsInBatch) and on jobs already visible to tx (WithParents)
// included. An invalid job fails with the error EnqueueMany gives, wrapping
// ErrInvalidJob, before tx is touched. A tx the store cannot use wraps
// ErrTxUnsupported.
//
// BackWave never commits or rolls back tx. The jobs become claimable when
// the application commits; if it rolls back they never existed, and the
// returned ids name no job: the store does not give a rolled-back id to a
// later job (on SQLite, within the life of the Store that handed it out;
// see its JobInsertManyTx). After an error, roll tx back:
// nothing of the call was inserted, but a failed statement may have left tx
// unusable.
//
// Wake-Up Hints fire only after the commit, never for a rollback: on
// PostgreSQL the insert's NOTIFY is itself transactional and goes out at
// commit; on SQLite no hint is sent (nothing can see the commit of a
// *sql.Tx), so workers find the jobs at their next poll, within their Worker
// Group's PollInterval. Either way a hint only cuts latency; polling finds
// every committed job.
func (c *Client) EnqueueManyTx(ctx context.Context, tx Tx, params []EnqueueParams) ([]JobID, error) {
	res, err := c.enqueueTx(ctx, tx, params)
	if err != nil || res == nil {
		return nil, err
	}
	return store.ResultIDs(res), nil
}

// EnqueueUniqueTx is EnqueueUnique inside tx (see EnqueueManyTx): it also
// says whether the job was stored, or its unique key was held, or its
// Replace or Debounce mode rewrote the holder (EnqueueResult). A rewrite
// commits or rolls back with tx, as an insert does; a holder that is not
// pending refuses the enqueue with ErrHolderNotPending, and tx should be
// rolled back.
func (c *Client) EnqueueUniqueTx(ctx context.Context, tx Tx, args JobArgs, opts ...EnqueueOption) (EnqueueResult, error) {
	res, err := c.EnqueueManyUniqueTx(ctx, tx, []EnqueueParams{{Args: args, Options: opts}})
	if err != nil {
		return EnqueueResult{}, err
	}
	return res[0], nil
}

// EnqueueManyUniqueTx is EnqueueManyUnique inside tx (see EnqueueManyTx):
// it answers per job, in input order, what the insert did (EnqueueResult).
func (c *Client) EnqueueManyUniqueTx(ctx context.Context, tx Tx, params []EnqueueParams) ([]EnqueueResult, error) {
	res, err := c.enqueueTx(ctx, tx, params)
	if err != nil || res == nil {
		return nil, err
	}
	return enqueueResults(res), nil
}

// enqueueTx is the one path of every enqueue in the caller's transaction.
func (c *Client) enqueueTx(ctx context.Context, tx Tx, params []EnqueueParams) ([]store.InsertResult, error) {
	ins, ok := c.store.(store.TxInserter)
	if !ok {
		return nil, fmt.Errorf("backwave: enqueue in the caller's transaction: %w: the Client's store, a %T, has no Transactional Enqueue",
			ErrTxUnsupported, c.store)
	}
	if len(params) == 0 {
		return nil, nil
	}
	jobs, err := c.newJobs(params)
	if err != nil {
		return nil, err
	}
	const where = " in the caller's transaction"
	res, err := c.insertThrough(ctx, jobs, true, where, func(ctx context.Context) ([]store.InsertResult, error) {
		return ins.JobInsertManyResultsInTx(ctx, tx, store.InsertManyParams{Jobs: jobs})
	})
	if err != nil {
		return nil, err
	}
	c.logResults(ctx, where, jobs, res)
	return res, nil
}
