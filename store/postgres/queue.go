package postgres

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/store"
)

// queueSetSQL writes one Queue setting, making the Queue known if it was not,
// and sends a NOTIFY ($4) when the change may let claims start (a resume or
// a changed limit).
const queueSetSQL = `WITH upsert AS (
    INSERT INTO backwave.queue AS q (name, paused, concurrency_limit)
    VALUES ($1::text, coalesce($2::bool, false), coalesce($3::int, 0))
    ON CONFLICT (name) DO UPDATE
    SET paused = coalesce($2::bool, q.paused), concurrency_limit = coalesce($3::int, q.concurrency_limit)
    RETURNING q.name, q.paused
),
hint AS (SELECT pg_notify('backwave.hint', u.name) FROM upsert u WHERE $4::bool AND NOT u.paused)
SELECT (SELECT count(*) FROM hint) FROM upsert`

// queueSet writes one Queue setting and its audit record in one
// transaction.
func (s *Store) queueSet(ctx context.Context, op, queue string, paused, limit any, hint bool, a store.Actor, action store.AuditAction, detail string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	err := s.db.inTx(ctx, func(q querier) error {
		if err := q.query(ctx, s.sql(queueSetSQL), []any{queue, paused, limit, hint && !s.opts.DisableNotify}, nil); err != nil {
			return err
		}
		return s.audit(ctx, q, a, action, 0, queue, detail)
	})
	return s.wrap(fmt.Sprintf("%s queue %q", op, queue), err)
}

// QueuePause stops claims from the Queue, making it known if it was not.
// Running jobs keep their Leases. A claim already under way when the pause
// commits may still finish.
func (s *Store) QueuePause(ctx context.Context, p store.QueueParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.queueSet(ctx, "pause", p.Queue, true, nil, false, p.Actor, store.AuditQueuePause, "")
}

// QueueResume lets claims from the Queue start again, making it known if it
// was not.
func (s *Store) QueueResume(ctx context.Context, p store.QueueParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.queueSet(ctx, "resume", p.Queue, false, nil, true, p.Actor, store.AuditQueueResume, "")
}

// QueueSetLimit sets the Queue's cluster-wide Concurrency Limit (0 removes
// it), making the Queue known if it was not. A limit below the Running count
// revokes no Lease; claims from the Queue stop until Running drops below
// it.
func (s *Store) QueueSetLimit(ctx context.Context, p store.QueueSetLimitParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.queueSet(ctx, "set the limit of", p.Queue, nil, int32(min(p.Limit, 1<<31-1)), true, p.Actor, store.AuditQueueSetLimit, store.LimitDetail(p.Limit))
}

const queueListSQL = `WITH now AS (SELECT (extract(epoch FROM coalesce($1::timestamptz, now())) * 1000000)::bigint AS us)
SELECT q.name, q.paused, q.concurrency_limit, coalesce(r.n, 0), q.rate_limit, q.rate_period,
    CASE WHEN q.rate_limit > 0 AND q.rate_window = ` + rateWindowSQL + ` THEN q.rate_count ELSE 0 END,
    q.key_limit, q.key_rate_limit, q.key_rate_period, q.fair_claim
FROM backwave.queue q CROSS JOIN now
LEFT JOIN (SELECT j.queue, count(*) AS n FROM backwave.job j WHERE j.state = 'running' GROUP BY j.queue) r
    ON r.queue = q.name
ORDER BY q.name COLLATE "C"`

// QueueList returns every known Queue — named by a job or by a setting —
// with its settings and Running count, ordered by name (byte order).
func (s *Store) QueueList(ctx context.Context) ([]store.QueueInfo, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := []store.QueueInfo{}
	err := s.db.query(ctx, s.sql(queueListSQL), []any{s.nowArg()}, func(scan scanFunc) error {
		var q store.QueueInfo
		var rateLimit int32
		var ratePeriod int64
		var keyLimit, keyRateLimit int32
		var keyRatePeriod int64
		var fair bool
		if err := scan(&q.Name, &q.Paused, &q.Limit, &q.Running, &rateLimit, &ratePeriod, &q.RateStarted,
			&keyLimit, &keyRateLimit, &keyRatePeriod, &fair); err != nil {
			return err
		}
		q.Rate = rateOf(rateLimit, ratePeriod)
		q.Keys = keyPolicyOf(keyLimit, keyRateLimit, keyRatePeriod, fair)
		out = append(out, q)
		return nil
	})
	if err != nil {
		return nil, s.wrap("list queues", err)
	}
	return out, nil
}

// queueRemoveLockSQL serializes QueueRemove against every insert into the
// Queue. An insert makes its Queue known without locking an existing queue
// row (insertSideSQL), so nothing per Queue would stop one that began
// before the removal from committing a job after it: the removal holds the
// job table in SHARE mode, which waits for every job write in flight and
// holds off new ones until it commits (a few statements), and it holds the
// count folds' locks so no fold moves the Queue's deltas meanwhile. The
// lock_timeout bounds how long a long-open application transaction that
// wrote jobs can make it wait.
func queueRemoveLockSQL() []string {
	return []string{
		`SET LOCAL lock_timeout = '5s'`,
		`LOCK TABLE backwave.job IN SHARE MODE`,
		`SELECT pg_advisory_xact_lock(hashtext('backwave.job_count')), pg_advisory_xact_lock(hashtext('backwave.job_key_count'))`,
	}
}

// queueRemoveCountSQL says whether the Queue is known and how many jobs it
// holds, from the counters and the deltas not yet folded (countsSQL).
const queueRemoveCountSQL = `SELECT EXISTS (SELECT 1 FROM backwave.queue WHERE name = $1),
    coalesce((SELECT sum(n) FROM backwave.job_count WHERE queue = $1), 0)
    + coalesce((SELECT sum(n) FROM backwave.job_count_delta WHERE queue = $1), 0)`

// queueRemoveSQL deletes an empty Queue's rows, one statement a table: the
// counters (all netting to zero) and their deltas, the per-key rows, the
// SQL enqueue's Wire Name list, and the settings row.
func queueRemoveSQL() []string {
	return []string{
		`DELETE FROM backwave.job_count WHERE queue = $1`,
		`DELETE FROM backwave.job_count_delta WHERE queue = $1`,
		`DELETE FROM backwave.job_key_count WHERE queue = $1`,
		`DELETE FROM backwave.job_key_count_delta WHERE queue = $1`,
		`DELETE FROM backwave.queue_key WHERE queue = $1`,
		`DELETE FROM backwave.queue_wire_name WHERE queue = $1`,
		`DELETE FROM backwave.queue WHERE name = $1`,
	}
}

// QueueRemove removes an empty Queue with its settings and per-key rows,
// serialized against inserts (queueRemoveLockSQL).
func (s *Store) QueueRemove(ctx context.Context, p store.QueueParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	err := s.db.inTx(ctx, func(q querier) error {
		for _, stmt := range queueRemoveLockSQL() {
			if err := q.query(ctx, s.sql(stmt), nil, nil); err != nil {
				return err
			}
		}
		var known bool
		var jobs int64
		if err := q.query(ctx, s.sql(queueRemoveCountSQL), []any{p.Queue}, func(scan scanFunc) error { return scan(&known, &jobs) }); err != nil {
			return err
		}
		if !known {
			return store.ErrNotFound
		}
		if err := store.CheckQueueEmpty(p.Queue, int(jobs)); err != nil {
			return err
		}
		for _, stmt := range queueRemoveSQL() {
			if _, err := q.exec(ctx, s.sql(stmt), p.Queue); err != nil {
				return err
			}
		}
		return s.audit(ctx, q, p.Actor, store.AuditQueueRemove, 0, p.Queue, "")
	})
	return s.wrap(fmt.Sprintf("remove queue %q", p.Queue), err)
}
