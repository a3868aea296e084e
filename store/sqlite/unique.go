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
)

// uniqueQueries are the unique-key statements renamed to one Schema Name.
type uniqueQueries struct {
	take, holder, bind string
}

func newUniqueQueries(n schemaName) uniqueQueries {
	r := n.Rename
	return uniqueQueries{take: r(sqlTakeUnique), holder: r(sqlUniqueHolder), bind: r(sqlBindUnique)}
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
