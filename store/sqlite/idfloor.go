package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// The job table's ids come from AUTOINCREMENT, whose counter is a row of
// sqlite_sequence. That row is an ordinary row: it rolls back with the
// transaction that moved it. A Transactional Enqueue (JobInsertManyTx) runs
// in the caller's transaction, so when the caller rolls back, the ids it was
// handed would be handed out again by the next insert — and job.ID's
// contract is that an id is never reused.
//
// The store cannot write outside the caller's transaction while the caller
// holds the file's write lock, so it remembers instead: idFloor is the
// highest id this Store handed out inside a caller's transaction, and every
// insert (the store's own or a caller's) first lifts the counter to at least
// that floor. The lift commits with the first insert that commits, so from
// then on every opener of the file sees it.

// sqlLiftSequence raises the job table's AUTOINCREMENT counter to ?1 when
// it is lower; sqlSeedSequence creates the counter's row when a rolled-back
// first insert left none.
const (
	sqlLiftSequence = `UPDATE sqlite_sequence SET seq = ?1 WHERE name = 'backwave_job' AND seq < ?1`
	sqlSeedSequence = `INSERT INTO sqlite_sequence (name, seq)
SELECT 'backwave_job', ?1 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'backwave_job')`
)

// liftSequence lifts the id counter in tx to the store's floor, if one was
// set; own tells whether tx is one of the store's own write transactions.
func (s *Store) liftSequence(ctx context.Context, tx *sql.Tx, own bool) error {
	floor := s.idFloor.Load()
	if floor == 0 {
		return nil
	}
	for _, query := range []string{sqlLiftSequence, sqlSeedSequence} {
		query = s.schema.Rename(query)
		var err error
		if own {
			_, err = s.exec(ctx, tx, query, floor)
		} else {
			_, err = tx.ExecContext(ctx, query, floor)
		}
		if err != nil {
			return fmt.Errorf("keep ids above %d, the highest handed out in a transaction that may have rolled back: %w", floor, err)
		}
	}
	return nil
}
