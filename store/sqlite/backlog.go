package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/backwave/backwave/store"
)

// sqlBacklog reads, per Queue with Scheduled jobs in the maintained counts:
// the ready count off the due index (backwave_job_due: queue, scheduled_at
// under state 1), stopping at ?2 entries, and only where it stopped there
// the later count the same way (below the cap, ready is exact and later the
// rest), the oldest
// ready due time (one probe of the same index), and the Retrying count,
// stopping at ?2 too (store.BacklogFromCounts turns the capped counts into
// the split), so the cost is bounded by the cap, never the table.
const sqlBacklog = `SELECT b.queue, b.n, b.ready,
	CASE WHEN b.ready >= ?2 THEN (SELECT COUNT(*) FROM (SELECT 1 FROM backwave_job j WHERE j.state = 1 AND j.queue = b.queue AND j.scheduled_at > ?1 LIMIT ?2)) ELSE 0 END,
	b.oldest, b.retrying
FROM (SELECT c.queue, c.n,
	(SELECT COUNT(*) FROM (SELECT 1 FROM backwave_job j WHERE j.state = 1 AND j.queue = c.queue AND j.scheduled_at <= ?1 LIMIT ?2)) AS ready,
	(SELECT MIN(j.scheduled_at) FROM backwave_job j WHERE j.state = 1 AND j.queue = c.queue AND j.scheduled_at <= ?1) AS oldest,
	(SELECT COUNT(*) FROM (SELECT 1 FROM backwave_job j WHERE j.state = 1 AND j.queue = c.queue AND j.retry_cause <> 0 LIMIT ?2)) AS retrying
	FROM backwave_job_count c WHERE c.state = 1 AND c.n > 0) b
ORDER BY b.queue`

// sqlThroughput counts settled jobs per minute and state off the
// finish-time index (backwave_job_finalized: state, finalized_at).
const sqlThroughput = `SELECT finalized_at / 60000000, state, COUNT(*) FROM backwave_job
	WHERE state IN (4, 5, 6, 7) AND finalized_at >= ?1 GROUP BY 1, 2 ORDER BY 1, 2`

// QueueBacklog splits every Queue's Scheduled jobs into ready and later at
// the store's clock now, in one read transaction, each count walking at
// most p's cap of index entries.
func (s *Store) QueueBacklog(ctx context.Context, p store.BacklogParams) ([]store.QueueBacklog, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := []store.QueueBacklog{}
	now := micros(s.clock.Now())
	limit := p.Cap()
	err := s.read(ctx, "read queue backlog", func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlBacklog), now, limit)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var queue string
			var scheduled, ready, later, retrying int
			var oldest sql.NullInt64
			if err := rows.Scan(&queue, &scheduled, &ready, &later, &oldest, &retrying); err != nil {
				return err
			}
			var at time.Time
			if oldest.Valid {
				at = fromMicros(oldest.Int64)
			}
			out = append(out, store.BacklogFromCounts(queue, scheduled, ready, later, retrying, limit, at))
		}
		return rows.Err()
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
