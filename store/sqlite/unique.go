package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Unique keys (migrations/0006_unique.sql). A key row in backwave_job_unique
// names the job holding one key: until the job first ends terminal
// (expires_at NULL; the release trigger deletes the row in the statement
// that ends the job, whichever it is) or until expires_at. The table's
// primary key enforces the rule, and an insert takes a key in the write
// transaction that inserts the job:
//
//  1. sqlTakeUnique upserts the key row with a placeholder holder (0): a
//     new key is inserted, an expired row is replaced, and a held row is
//     left alone and returns nothing;
//  2. if nothing came back the key is held: sqlUniqueHolder reads who holds
//     it, and the job is not inserted;
//  3. otherwise the job is inserted and sqlBindUnique names it in the row.
//
// The read in step 2 happens after the write of step 1, inside a write
// transaction, which holds the database file's one write lock from its
// first write to its commit: no other connection, in this process or any
// other, can take or free the key in between.
const (
	sqlTakeUnique = `INSERT INTO backwave_job_unique (key, job_id, expires_at) VALUES (?1, 0, ?2)
	ON CONFLICT (key) DO UPDATE SET job_id = 0, expires_at = excluded.expires_at WHERE expires_at <= ?3
	RETURNING job_id`
	sqlUniqueHolder = `SELECT job_id FROM backwave_job_unique WHERE key = ?`
	sqlBindUnique   = `UPDATE backwave_job_unique SET job_id = ?2 WHERE key = ?1`
	sqlDropPayload  = `DELETE FROM backwave_job_payload WHERE job_id = ?`
	sqlDropTags     = `DELETE FROM backwave_job_tag WHERE job_id = ?`
	// sqlPruneTags drops from Tag Suggest's dictionary each Tag of job ?1
	// no other job carries, before the job's Tags are replaced (as a purge
	// does; the single writer makes the check exact).
	sqlPruneTags = `DELETE FROM backwave_tag WHERE (key, value) IN (SELECT key, value FROM backwave_job_tag WHERE job_id = ?1)
	AND NOT EXISTS (SELECT 1 FROM backwave_job_tag o WHERE o.key = backwave_tag.key AND o.value = backwave_tag.value AND o.job_id <> ?1)`
)

// uniqueQueries are the unique-key statements renamed to one Schema Name.
type uniqueQueries struct {
	take, holder, bind, dropPayload, dropTags, pruneTags string
}

func newUniqueQueries(n schemaName) uniqueQueries {
	r := n.Rename
	return uniqueQueries{take: r(sqlTakeUnique), holder: r(sqlUniqueHolder), bind: r(sqlBindUnique),
		dropPayload: r(sqlDropPayload), dropTags: r(sqlDropTags), pruneTags: r(sqlPruneTags)}
}

// takeUnique takes u's key in tx at now for a job about to be inserted, or
// returns the id of the job holding it (0 if the key was taken). own tells
// whether tx is one of the store's own write transactions. After a take
// the caller inserts the job and calls bindUnique.
func (s *Store) takeUnique(ctx context.Context, tx *sql.Tx, own bool, u store.Unique, now time.Time) (job.ID, error) {
	var expires any // NULL: held while the job is live
	if u.Scope == store.UniquePeriod {
		expires = micros(now.Add(u.Period))
	}
	var placeholder int64
	err := s.rowIn(ctx, tx, own, s.q.unique.take, []any{u.Key, expires, micros(now)}, &placeholder)
	switch {
	case err == nil:
		return 0, nil
	case !errors.Is(err, sql.ErrNoRows):
		return 0, fmt.Errorf("take unique key %q: %w", u.Key, err)
	}
	var holder int64
	if err := s.rowIn(ctx, tx, own, s.q.unique.holder, []any{u.Key}, &holder); err != nil {
		return 0, fmt.Errorf("read the holder of unique key %q: %w", u.Key, err)
	}
	return job.ID(holder), nil
}

// bindUnique names the job id, just inserted, as the holder of the key
// takeUnique took.
func (s *Store) bindUnique(ctx context.Context, tx *sql.Tx, own bool, key string, id int64) error {
	var err error
	if own {
		_, err = s.exec(ctx, tx, s.q.unique.bind, key, id)
	} else {
		_, err = tx.ExecContext(ctx, s.q.unique.bind, key, id)
	}
	if err != nil {
		return fmt.Errorf("hold unique key %q: %w", key, err)
	}
	return nil
}

// rowIn runs query in tx and scans its one row into dest; own tells
// whether tx is one of the store's own write transactions.
func (s *Store) rowIn(ctx context.Context, tx *sql.Tx, own bool, query string, args []any, dest ...any) error {
	if own {
		return s.queryRow(ctx, tx, query, args, dest...)
	}
	return tx.QueryRowContext(ctx, query, args...).Scan(dest...)
}

// rewrite gives holder, the job holding job i's unique key, job i's payload
// and Tags and the due time its mode decides (store.Unique.RewriteDue),
// and records the rewrite in the audit trail, all in tx: the write lock tx
// holds since takeUnique keeps the holder's state from changing under it.
// A holder that is not Scheduled is store.ErrHolderNotPending, and the
// caller's transaction is rolled back (or, for a caller's own, must be).
// insPayload, insTag and knowTag are the insert's prepared statements. It
// returns the holder's Queue if the rewrite made it due at now.
func (s *Store) rewrite(ctx context.Context, tx *sql.Tx, p store.InsertManyParams, i int, holder job.ID, now time.Time,
	insPayload, insTag, knowTag *sql.Stmt) (string, error) {
	nj := p.Jobs[i]
	h, err := s.getIn(ctx, tx, holder)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("%w: unique key %q is held by job %d, which is purged", store.ErrHolderNotPending, nj.Unique.Key, holder)
	case err != nil:
		return "", fmt.Errorf("read the holder of unique key %q: %w", nj.Unique.Key, err)
	case h.State != job.StateScheduled:
		return "", fmt.Errorf("%w: unique key %q is held by job %d, which is %s", store.ErrHolderNotPending, nj.Unique.Key, holder, h.State)
	}
	payload, err := payloadFor(p, i, holder)
	if err != nil {
		return "", err
	}
	due := nj.Unique.RewriteDue(now, h.CreatedAt, nj.ScheduledAt)
	id := int64(holder)
	for _, q := range []string{s.q.unique.dropPayload, s.q.unique.pruneTags, s.q.unique.dropTags} {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return "", fmt.Errorf("rewrite job %d: %w", holder, err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.m.reschedule, micros(due), id); err != nil {
		return "", fmt.Errorf("rewrite job %d: due time: %w", holder, err)
	}
	if len(payload) > 0 {
		if _, err := insPayload.ExecContext(ctx, id, payload); err != nil {
			return "", fmt.Errorf("rewrite job %d: payload: %w", holder, err)
		}
	}
	for _, t := range nj.Tags {
		if _, err := insTag.ExecContext(ctx, id, t.Key, t.Value); err != nil {
			return "", fmt.Errorf("rewrite job %d: tag %s: %w", holder, t, err)
		}
	}
	if err := knowTags(ctx, knowTag, nj.Tags); err != nil {
		return "", fmt.Errorf("rewrite job %d: %w", holder, err)
	}
	if err := s.audit(ctx, tx, now, store.ActorSystem, store.RewriteAction(nj.Unique.Mode), holder, h.Queue,
		store.RewriteDetail(nj.Unique.Key, due)); err != nil {
		return "", err
	}
	if due.After(now) {
		return "", nil
	}
	return h.Queue, nil
}
