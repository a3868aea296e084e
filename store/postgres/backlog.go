package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// backlogSQL reads, in one snapshot, per Queue with Scheduled jobs in the
// maintained counts (counters plus deltas), the ready count and the oldest
// ready due time off the due index (job_scheduled: queue, scheduled_at
// under state 'scheduled'), one index range per Queue, and the Retrying
// count off its partial index (job_retrying).
const backlogSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
sched AS (
    SELECT c.queue, sum(c.n)::bigint AS n FROM (
        SELECT queue, n FROM backwave.job_count WHERE state = 'scheduled'
        UNION ALL
        SELECT queue, n FROM backwave.job_count_delta WHERE state = 'scheduled'
    ) c GROUP BY c.queue HAVING sum(c.n) > 0
),
ret AS (
    SELECT j.queue, count(*) AS n FROM backwave.job j
    WHERE j.state = 'scheduled' AND j.retry_cause <> '' GROUP BY j.queue
)
SELECT s.queue, s.n,
    (SELECT count(*) FROM backwave.job j WHERE j.state = 'scheduled' AND j.queue = s.queue AND j.scheduled_at <= (SELECT t FROM now)),
    (SELECT min(j.scheduled_at) FROM backwave.job j WHERE j.state = 'scheduled' AND j.queue = s.queue AND j.scheduled_at <= (SELECT t FROM now)),
    coalesce(r.n, 0)
FROM sched s LEFT JOIN ret r ON r.queue = s.queue
ORDER BY s.queue COLLATE "C"`

// throughputSQL counts settled jobs per minute and state off the
// finish-time index (job_finalized: state, finalized_at).
const throughputSQL = `SELECT date_trunc('minute', j.finalized_at), j.state, count(*) FROM backwave.job j
WHERE j.state IN ('succeeded', 'dead_lettered', 'cancelled', 'quarantined') AND j.finalized_at >= $1
GROUP BY 1, 2`

// QueueBacklog splits every Queue's Scheduled jobs into ready and later at
// the store's now, in one statement (one snapshot).
func (s *Store) QueueBacklog(ctx context.Context) ([]store.QueueBacklog, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := []store.QueueBacklog{}
	err := s.db.query(ctx, s.sql(backlogSQL), []any{s.nowArg()}, func(scan scanFunc) error {
		var b store.QueueBacklog
		var scheduled, ready, retrying int64
		var oldest *time.Time
		if err := scan(&b.Queue, &scheduled, &ready, &oldest, &retrying); err != nil {
			return err
		}
		b.Ready, b.Later, b.Retrying = int(ready), int(max(0, scheduled-ready)), int(retrying)
		if oldest != nil && ready > 0 {
			b.OldestReady = oldest.UTC()
		}
		out = append(out, b)
		return nil
	})
	if err != nil {
		return nil, s.wrap("read queue backlog", err)
	}
	return out, nil
}

// Throughput counts the jobs that settled at or after p.Since, per minute
// and state.
func (s *Store) Throughput(ctx context.Context, p store.ThroughputParams) ([]store.ThroughputBucket, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := []store.ThroughputBucket{}
	err := s.db.query(ctx, s.sql(throughputSQL), []any{p.Since}, func(scan scanFunc) error {
		var b store.ThroughputBucket
		var state string
		var n int64
		if err := scan(&b.Minute, &state, &n); err != nil {
			return err
		}
		var err error
		if b.State, err = job.ParseState(state); err != nil {
			return err
		}
		b.Minute, b.Count = b.Minute.UTC().Truncate(time.Minute), int(n)
		out = append(out, b)
		return nil
	})
	if err != nil {
		return nil, s.wrap("read throughput", err)
	}
	slices.SortFunc(out, store.CompareThroughput)
	return out, nil
}
