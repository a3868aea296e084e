package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CountsDrift compares the Monitor's counts (backwave_job_count, kept by
// the count trigger and by the statements that count themselves) with a
// count of the job table, from one read snapshot, and describes every
// (Queue, state) where they differ; "" when they agree.
func CountsDrift(ctx context.Context, s *Store) (string, error) {
	type key struct {
		queue string
		state int64
	}
	read := func(tx *sql.Tx, query string) (map[key]int64, error) {
		rows, err := tx.QueryContext(ctx, s.schema.Rename(query))
		if err != nil {
			return nil, err
		}
		out := make(map[key]int64)
		for rows.Next() {
			var k key
			var n int64
			if err := rows.Scan(&k.queue, &k.state, &n); err != nil {
				_ = rows.Close()
				return nil, err
			}
			out[k] = n
		}
		return out, errors.Join(rows.Err(), rows.Close())
	}
	var kept, counted map[key]int64
	err := s.read(ctx, "check counts", func(tx *sql.Tx) error {
		var err error
		if kept, err = read(tx, `SELECT queue, state, n FROM backwave_job_count WHERE n <> 0`); err != nil {
			return err
		}
		counted, err = read(tx, `SELECT queue, state, COUNT(*) FROM backwave_job GROUP BY queue, state`)
		return err
	})
	if err != nil {
		return "", err
	}
	var drift []string
	for k, n := range counted {
		if kept[k] != n {
			drift = append(drift, fmt.Sprintf("queue %q state %d: kept %d, counted %d", k.queue, k.state, kept[k], n))
		}
	}
	for k, n := range kept {
		if _, ok := counted[k]; !ok {
			drift = append(drift, fmt.Sprintf("queue %q state %d: kept %d, counted 0", k.queue, k.state, n))
		}
	}
	if len(drift) == 0 {
		return "", nil
	}
	slices.Sort(drift)
	return strings.Join(drift, "; "), nil
}

// SyncLevel reads PRAGMA synchronous on the store's write connection and on
// a read connection: 1 is NORMAL, 2 FULL.
func SyncLevel(ctx context.Context, s *Store) (write, read int, err error) {
	if err := s.w.QueryRowContext(ctx, "SELECT synchronous FROM pragma_synchronous").Scan(&write); err != nil {
		return 0, 0, err
	}
	err = s.read(ctx, "read synchronous", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT synchronous FROM pragma_synchronous").Scan(&read)
	})
	return write, read, err
}
