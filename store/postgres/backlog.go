package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// backlogSQL reads, in one snapshot, per Queue with Scheduled jobs in the
// maintained counts (counters plus deltas): the ready count off the due
// index (job_scheduled: queue, scheduled_at under state 'scheduled'),
// stopping at $2 entries, and only where it stopped there the later count
// the same way (below the cap, ready is exact and later the rest, so a
// Queue's read walks no more entries than its ready jobs), the oldest ready
// due time (one
// probe of the same index), and the Retrying count, stopping at $2 too
// (store.BacklogFromCounts turns the capped counts into the split).
const backlogSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
sched AS (
    SELECT c.queue, sum(c.n)::bigint AS n FROM (
        SELECT queue, n FROM backwave.job_count WHERE state = 'scheduled'
        UNION ALL
        SELECT queue, n FROM backwave.job_count_delta WHERE state = 'scheduled'
    ) c GROUP BY c.queue HAVING sum(c.n) > 0
)
SELECT s.queue, s.n, r.ready,
    CASE WHEN r.ready >= $2 THEN (SELECT count(*) FROM (SELECT 1 FROM backwave.job j WHERE j.state = 'scheduled' AND j.queue = s.queue AND j.scheduled_at > (SELECT t FROM now) LIMIT $2) x) ELSE 0 END,
    (SELECT min(j.scheduled_at) FROM backwave.job j WHERE j.state = 'scheduled' AND j.queue = s.queue AND j.scheduled_at <= (SELECT t FROM now)),
    (SELECT count(*) FROM (SELECT 1 FROM backwave.job j WHERE j.state = 'scheduled' AND j.retry_cause <> '' AND j.queue = s.queue LIMIT $2) x)
FROM sched s CROSS JOIN LATERAL (
    SELECT count(*) AS ready FROM (SELECT 1 FROM backwave.job j WHERE j.state = 'scheduled' AND j.queue = s.queue AND j.scheduled_at <= (SELECT t FROM now) LIMIT $2) x
) r
ORDER BY s.queue COLLATE "C"`

// throughputSQL counts settled jobs per minute and state off the
// finish-time index (job_finalized: state, finalized_at).
const throughputSQL = `SELECT date_trunc('minute', j.finalized_at), j.state, count(*) FROM backwave.job j
WHERE j.state IN ('succeeded', 'dead_lettered', 'cancelled', 'quarantined') AND j.finalized_at >= $1
GROUP BY 1, 2`

// QueueBacklog splits every Queue's Scheduled jobs into ready and later at
// the store's now, in one statement (one snapshot), each count walking at
// most p's cap of index entries.
func (s *Store) QueueBacklog(ctx context.Context, p store.BacklogParams) ([]store.QueueBacklog, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := []store.QueueBacklog{}
	limit := p.Cap()
	err := s.db.query(ctx, s.sql(backlogSQL), []any{s.nowArg(), limit}, func(scan scanFunc) error {
		var queue string
		var scheduled, ready, later, retrying int64
		var oldest *time.Time
		if err := scan(&queue, &scheduled, &ready, &later, &oldest, &retrying); err != nil {
			return err
		}
		var at time.Time
		if oldest != nil {
			at = oldest.UTC()
		}
		out = append(out, store.BacklogFromCounts(queue, int(scheduled), int(ready), int(later), int(retrying), limit, at))
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
