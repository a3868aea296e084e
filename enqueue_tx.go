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
// returned ids name no job. Keep an id only where tx writes it: on SQLite a
// later job may be given the id of a rolled-back one (PostgreSQL's ids are
// never handed out twice). After an error, roll tx back: nothing of the
// call was inserted, but a failed statement may have left tx unusable.
//
// Wake-Up Hints fire only after the commit, never for a rollback: on
// PostgreSQL the insert's NOTIFY is itself transactional and goes out at
// commit; on SQLite no hint is sent (nothing can see the commit of a
// *sql.Tx), so workers find the jobs at their next poll, within their Worker
// Group's PollInterval. Either way a hint only cuts latency; polling finds
// every committed job.
func (c *Client) EnqueueManyTx(ctx context.Context, tx Tx, params []EnqueueParams) ([]JobID, error) {
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
	res, err := c.insertThrough(ctx, jobs, true, " in the caller's transaction", func(ctx context.Context) ([]store.InsertResult, error) {
		ids, err := ins.JobInsertManyInTx(ctx, tx, store.InsertManyParams{Jobs: jobs})
		return insertedResults(ids), err
	})
	if err != nil {
		return nil, err
	}
	ids := store.ResultIDs(res)
	c.logEnqueued(ctx, "job enqueued in the caller's transaction", jobs, ids)
	return ids, nil
}
