package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/backwave/backwave/store"
)

// sqlBacklog reads, per Queue with Scheduled jobs in the maintained counts,
// the ready count and the oldest ready due time off the due index
// (backwave_job_due: queue, scheduled_at under state 1), one index range
// per Queue, so the cost follows the ready jobs, never the table.
const sqlBacklog = `SELECT c.queue, c.n,
	(SELECT COUNT(*) FROM backwave_job j WHERE j.state = 1 AND j.queue = c.queue AND j.scheduled_at <= ?1),
	(SELECT MIN(j.scheduled_at) FROM backwave_job j WHERE j.state = 1 AND j.queue = c.queue AND j.scheduled_at <= ?1)
FROM backwave_job_count c WHERE c.state = 1 AND c.n > 0 ORDER BY c.queue`

// sqlRetrying counts the Retrying view per Queue off its partial index.
const sqlRetrying = `SELECT queue, COUNT(*) FROM backwave_job WHERE state = 1 AND retry_cause <> 0 GROUP BY queue`

// sqlThroughput counts settled jobs per minute and state off the
// finish-time index (backwave_job_finalized: state, finalized_at).
const sqlThroughput = `SELECT finalized_at / 60000000, state, COUNT(*) FROM backwave_job
	WHERE state IN (4, 5, 6, 7) AND finalized_at >= ?1 GROUP BY 1, 2 ORDER BY 1, 2`

// QueueBacklog splits every Queue's Scheduled jobs into ready and later at
// the store's clock now, in one read transaction.
func (s *Store) QueueBacklog(ctx context.Context) ([]store.QueueBacklog, error) {
	out := []store.QueueBacklog{}
	now := micros(s.clock.Now())
	err := s.read(ctx, "read queue backlog", func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlBacklog), now)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		at := make(map[string]int)
		for rows.Next() {
			var b store.QueueBacklog
			var scheduled int
			var oldest sql.NullInt64
			if err := rows.Scan(&b.Queue, &scheduled, &b.Ready, &oldest); err != nil {
				return err
			}
			b.Later = max(0, scheduled-b.Ready)
			if oldest.Valid && b.Ready > 0 {
				b.OldestReady = fromMicros(oldest.Int64)
			}
			at[b.Queue] = len(out)
			out = append(out, b)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		_ = rows.Close()
		rs, err := tx.QueryContext(ctx, s.schema.Rename(sqlRetrying))
		if err != nil {
			return err
		}
		defer func() { _ = rs.Close() }()
		for rs.Next() {
			var q string
			var n int
			if err := rs.Scan(&q, &n); err != nil {
				return err
			}
			if i, ok := at[q]; ok {
				out[i].Retrying = n
			}
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Throughput counts the jobs that settled at or after p.Since, per minute
// and state.
func (s *Store) Throughput(ctx context.Context, p store.ThroughputParams) ([]store.ThroughputBucket, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := []store.ThroughputBucket{}
	err := s.read(ctx, "read throughput", func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlThroughput), micros(p.Since))
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var minute, code int64
			var b store.ThroughputBucket
			if err := rows.Scan(&minute, &code, &b.Count); err != nil {
				return err
			}
			if b.State, err = decode(stateCodes, "state", code); err != nil {
				return err
			}
			b.Minute = time.Unix(minute*60, 0).UTC()
			out = append(out, b)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
