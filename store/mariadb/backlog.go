package mariadb

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/store"
)

// backlogSQL reads, per Queue with Scheduled jobs in the maintained counts:
// the ready count off the due index (backwave_job_due: queue, state,
// scheduled_at) and, only where it reached the cap, the later count the
// same way (below the cap, ready is exact and later the rest), the oldest
// ready due time (one probe of the same index), and the Retrying count over
// the same index's (queue, state) prefix, each count stopping at the cap (store.BacklogFromCounts turns
// the capped counts into the split). MariaDB's derived tables cannot name
// the outer row, so a count is capped by a probe instead: a scalar
// subquery for the cap-th entry (LIMIT 1 OFFSET cap − 1), and only where
// none exists the exact count, under the cap.
var backlogSQL = `SELECT b.queue, b.n, b.ready,
	CASE WHEN b.ready >= ? THEN ` + cappedCount(`j.queue = b.queue AND j.state = 1 AND j.scheduled_at > ?`) + ` ELSE 0 END,
	b.oldest, b.retrying
FROM (SELECT c.queue, c.n,
	` + cappedCount(`j.queue = c.queue AND j.state = 1 AND j.scheduled_at <= ?`) + ` AS ready,
	(SELECT MIN(j.scheduled_at) FROM backwave_job j WHERE j.queue = c.queue AND j.state = 1 AND j.scheduled_at <= ?) AS oldest,
	` + cappedCount(`j.queue = c.queue AND j.state = 1 AND j.retry_cause <> 0`) + ` AS retrying
	FROM backwave_job_count c WHERE c.state = 1 AND c.n > 0) b`

// cappedCount counts the jobs where holds, stopping at the cap: its
// placeholders are where's, the cap less one, where's again, the cap.
func cappedCount(where string) string {
	return `CASE WHEN (SELECT 1 FROM backwave_job j WHERE ` + where + ` LIMIT 1 OFFSET ?) IS NULL
		THEN (SELECT COUNT(*) FROM backwave_job j WHERE ` + where + `) ELSE ? END`
}

// throughputSQL counts settled jobs per minute and state off the
// finish-time index (backwave_job_finalized: state, finalized_at).
const throughputSQL = `SELECT finalized_at DIV 60000000, state, COUNT(*) FROM backwave_job
	WHERE state IN (4, 5, 6, 7) AND finalized_at >= ? GROUP BY 1, 2`

// QueueBacklog splits every Queue's Scheduled jobs into ready and later at
// the store's now, in one read (store.Backlog), each count walking at most
// p's cap of index entries.
func (s *Store) QueueBacklog(ctx context.Context, p store.BacklogParams) ([]store.QueueBacklog, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := []store.QueueBacklog{}
	limit := p.Cap()
	err := s.read(ctx, "read queue backlog", func(q querier, now time.Time) error {
		out = out[:0]
		us := micros(now)
		// The placeholders in text order: later's (counted only where
		// ready reached the cap), then the derived table's ready, oldest
		// ready and retrying.
		rows, err := q.QueryContext(ctx, backlogSQL,
			limit, us, limit-1, us, limit, // later
			us, limit-1, us, limit, // ready
			us,             // oldest ready
			limit-1, limit) // retrying
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var queue string
			var scheduled, ready, later, retrying int64
			var oldest *int64
			if err := rows.Scan(&queue, &scheduled, &ready, &later, &oldest, &retrying); err != nil {
				return err
			}
			var at time.Time
			if oldest != nil {
				at = fromMicros(*oldest)
			}
			out = append(out, store.BacklogFromCounts(queue, int(scheduled), int(ready), int(later), int(retrying), limit, at))
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b store.QueueBacklog) int { return strings.Compare(a.Queue, b.Queue) })
	return out, nil
}

// Throughput counts the jobs that settled at or after p.Since, per minute
// and state (store.Backlog).
func (s *Store) Throughput(ctx context.Context, p store.ThroughputParams) ([]store.ThroughputBucket, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := []store.ThroughputBucket{}
	err := s.read(ctx, "read throughput", func(q querier, _ time.Time) error {
		out = out[:0]
		rows, err := q.QueryContext(ctx, throughputSQL, micros(p.Since))
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
	slices.SortFunc(out, store.CompareThroughput)
	return out, nil
}
