package mariadb

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/store"
)

// backlogSQL reads, per Queue with Scheduled jobs in the maintained counts,
// the ready count and the oldest ready due time off the due index
// (backwave_job_due: queue, state, scheduled_at), one index range per
// Queue, and the Retrying count over the same index's (queue, state)
// prefix.
const backlogSQL = `SELECT c.queue, c.n,
	(SELECT COUNT(*) FROM backwave_job j WHERE j.queue = c.queue AND j.state = 1 AND j.scheduled_at <= ?),
	(SELECT MIN(j.scheduled_at) FROM backwave_job j WHERE j.queue = c.queue AND j.state = 1 AND j.scheduled_at <= ?),
	(SELECT COUNT(*) FROM backwave_job j WHERE j.queue = c.queue AND j.state = 1 AND j.retry_cause <> 0)
FROM backwave_job_count c WHERE c.state = 1 AND c.n > 0`

// throughputSQL counts settled jobs per minute and state off the
// finish-time index (backwave_job_finalized: state, finalized_at).
const throughputSQL = `SELECT finalized_at DIV 60000000, state, COUNT(*) FROM backwave_job
	WHERE state IN (4, 5, 6, 7) AND finalized_at >= ? GROUP BY 1, 2`

// QueueBacklog splits every Queue's Scheduled jobs into ready and later at
// the store's now, in one read (store.Backlog).
func (s *Store) QueueBacklog(ctx context.Context) ([]store.QueueBacklog, error) {
	out := []store.QueueBacklog{}
	err := s.read(ctx, "read queue backlog", func(q querier, now time.Time) error {
		out = out[:0]
		us := micros(now)
		rows, err := q.QueryContext(ctx, backlogSQL, us, us)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var b store.QueueBacklog
			var scheduled, ready, retrying int64
			var oldest *int64
			if err := rows.Scan(&b.Queue, &scheduled, &ready, &oldest, &retrying); err != nil {
				return err
			}
			b.Ready, b.Later, b.Retrying = int(ready), int(max(0, scheduled-ready)), int(retrying)
			if oldest != nil && ready > 0 {
				b.OldestReady = fromMicros(*oldest)
			}
			out = append(out, b)
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
