package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// The key-policy Operator Actions and the Monitor's top keys.

// keyIndexReadySQL says whether the index step job_key_due of migration
// 016 is built and valid in schema $1: until it is, a keyed claim would
// walk the Queue's jobs, so the key settings are refused.
const keyIndexReadySQL = `SELECT coalesce((SELECT i.indisvalid FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = $1::text AND c.relname = 'job_key_due'), false)`

// queueLockSQL makes Queue $1 known and locks its settings row, returning
// its Concurrency Limit and Key Rate period.
const queueLockSQL = `WITH known AS (
    INSERT INTO backwave.queue (name) VALUES ($1::text) ON CONFLICT DO NOTHING
)
SELECT q.concurrency_limit, q.key_rate_period FROM backwave.queue q WHERE q.name = $1::text FOR UPDATE`

// queueLockAgainSQL is queueLockSQL's read for a Queue another transaction
// made known after this one's snapshot: its row is visible to a new
// statement.
const queueLockAgainSQL = `SELECT q.concurrency_limit, q.key_rate_period FROM backwave.queue q WHERE q.name = $1::text FOR UPDATE`

// keySetSQL writes the key settings $2 to $5 of Queue $1 (NULL keeps a
// column) and sends a NOTIFY ($6) unless the Queue is paused.
const keySetSQL = `WITH upd AS (
    UPDATE backwave.queue q
    SET key_limit = coalesce($2::int, q.key_limit), key_rate_limit = coalesce($3::int, q.key_rate_limit),
        key_rate_period = coalesce($4::bigint, q.key_rate_period), fair_claim = coalesce($5::bool, q.fair_claim)
    WHERE q.name = $1::text
    RETURNING q.name, q.paused
),
hint AS (SELECT pg_notify('backwave.hint', u.name) FROM upd u WHERE $6::bool AND NOT u.paused)
SELECT (SELECT count(*) FROM hint) FROM upd`

// keyForgetSQL forgets every key window of Queue $1. Each key's row stays,
// with its Fair Claim turn: a new Key Rate period must not move a key to the
// head of the rotation as if it had never been served.
const keyForgetSQL = `UPDATE backwave.queue_key SET rate_window = NULL, rate_count = 0 WHERE queue = $1::text AND (rate_window IS NOT NULL OR rate_count <> 0)`

// keySet applies one key-policy setting and its audit record in one
// transaction, the Queue's row locked: check sees the Queue's Concurrency
// Limit and Key Rate period (µs) and may refuse, storing nothing.
func (s *Store) keySet(ctx context.Context, op, queue string, args [4]any, a store.Actor, action store.AuditAction, detail string,
	check func(limit int32, period int64) (forget bool, err error)) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	err := s.db.inTx(ctx, func(q querier) error {
		var ready bool
		if err := q.query(ctx, keyIndexReadySQL, []any{s.schema}, func(scan scanFunc) error { return scan(&ready) }); err != nil {
			return err
		}
		if !ready {
			return fmt.Errorf("%w: the Concurrency Key index job_key_due (migration 016) is not built yet", store.ErrSchemaTooOld)
		}
		var limit int32
		var period int64
		found := false
		read := func(scan scanFunc) error { found = true; return scan(&limit, &period) }
		if err := q.query(ctx, s.sql(queueLockSQL), []any{queue}, read); err != nil {
			return err
		}
		if !found {
			if err := q.query(ctx, s.sql(queueLockAgainSQL), []any{queue}, read); err != nil {
				return err
			}
		}
		forget, err := check(limit, period)
		if err != nil {
			return err
		}
		if forget {
			if _, err := q.exec(ctx, s.sql(keyForgetSQL), queue); err != nil {
				return err
			}
		}
		if err := q.query(ctx, s.sql(keySetSQL), []any{queue, args[0], args[1], args[2], args[3], !s.opts.DisableNotify}, nil); err != nil {
			return err
		}
		return s.audit(ctx, q, a, action, 0, queue, detail)
	})
	return s.wrap(fmt.Sprintf("%s queue %q", op, queue), err)
}

// QueueSetKeyLimit sets the Queue's Key Limit (0 removes it), making the
// Queue known if it was not, in one transaction with its audit record. A
// Key Limit above the Queue's Concurrency Limit is refused
// (store.ValidateKeyLimit) under the Queue's row lock, so no concurrent
// QueueSetLimit slips between the check and the write.
func (s *Store) QueueSetKeyLimit(ctx context.Context, p store.QueueSetKeyLimitParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.keySet(ctx, "set the key limit of", p.Queue, [4]any{int32(p.Limit), nil, nil, nil}, p.Actor,
		store.AuditQueueSetKeyLimit, store.KeyLimitDetail(p.Limit),
		func(limit int32, _ int64) (bool, error) { return false, store.ValidateKeyLimit(p.Limit, int(limit)) })
}

// QueueSetKeyRate sets the Queue's Key Rate (the zero QueueRate removes
// it), making the Queue known if it was not, in one transaction with its
// audit record. A new Limit under the same Period keeps every key's window
// count; a new Period or a removed Key Rate forgets them.
func (s *Store) QueueSetKeyRate(ctx context.Context, p store.QueueSetKeyRateParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	period := p.Rate.Period.Microseconds()
	return s.keySet(ctx, "set the key rate of", p.Queue, [4]any{nil, int32(p.Rate.Limit), period, nil}, p.Actor,
		store.AuditQueueSetKeyRate, store.KeyRateDetail(p.Rate),
		func(_ int32, old int64) (bool, error) { return old != period || p.Rate.IsZero(), nil })
}

// QueueSetFairClaim turns the Queue's Fair Claim on or off, making the
// Queue known if it was not, in one transaction with its audit record.
func (s *Store) QueueSetFairClaim(ctx context.Context, p store.QueueSetFairClaimParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.keySet(ctx, "set fair claim of", p.Queue, [4]any{nil, nil, nil, p.Fair}, p.Actor,
		store.AuditQueueSetFairClaim, store.FairClaimDetail(p.Fair),
		func(int32, int64) (bool, error) { return false, nil })
}

// queueKeysSQL sums the key counters of Queue $1 with their deltas not yet
// folded, and the Queue's own counts, whose difference is the jobs without
// a key (key NULL here), in one snapshot: Scheduled and Running per key.
const queueKeysSQL = `WITH keyed AS (
    SELECT c.concurrency_key AS key,
        coalesce(sum(c.n) FILTER (WHERE c.state = 'scheduled'), 0)::bigint AS scheduled,
        coalesce(sum(c.n) FILTER (WHERE c.state = 'running'), 0)::bigint AS running
    FROM (SELECT concurrency_key, state, n FROM backwave.job_key_count WHERE queue = $1::text AND state IN ('scheduled', 'running')
          UNION ALL
          SELECT concurrency_key, state, n FROM backwave.job_key_count_delta WHERE queue = $1::text AND state IN ('scheduled', 'running')) c
    GROUP BY c.concurrency_key
),
total AS (
    SELECT coalesce(sum(c.n) FILTER (WHERE c.state = 'scheduled'), 0)::bigint AS scheduled,
        coalesce(sum(c.n) FILTER (WHERE c.state = 'running'), 0)::bigint AS running
    FROM (SELECT state, n FROM backwave.job_count WHERE queue = $1::text AND state IN ('scheduled', 'running')
          UNION ALL
          SELECT state, n FROM backwave.job_count_delta WHERE queue = $1::text AND state IN ('scheduled', 'running')) c
)
SELECT k.key, k.scheduled, k.running FROM keyed k WHERE k.scheduled + k.running > 0
UNION ALL
SELECT NULL, t.scheduled - (SELECT coalesce(sum(scheduled), 0) FROM keyed), t.running - (SELECT coalesce(sum(running), 0) FROM keyed)
FROM total t`

// keyFoldSQL moves the key count deltas into the key counters, one fold at
// a time, as foldSQL does for the Queue counts.
const keyFoldSQL = `WITH lock AS (SELECT pg_try_advisory_xact_lock(hashtext('backwave.job_key_count')) AS ok),
moved AS (
    DELETE FROM backwave.job_key_count_delta d WHERE (SELECT ok FROM lock)
    RETURNING d.queue, d.concurrency_key, d.state, d.n
)
INSERT INTO backwave.job_key_count AS c (queue, concurrency_key, state, n)
SELECT m.queue, m.concurrency_key, m.state, sum(m.n) FROM moved m
GROUP BY m.queue, m.concurrency_key, m.state ORDER BY m.queue, m.concurrency_key, m.state
ON CONFLICT (queue, concurrency_key, state) DO UPDATE SET n = c.n + excluded.n`

// QueueKeys returns the Queue's Concurrency Keys with the most Scheduled
// and Running jobs together, most first (store.SortKeyCounts), from the
// key counters (migration 016), never the job table: one row per key with
// a live job, however many jobs each holds.
func (s *Store) QueueKeys(ctx context.Context, p store.QueueKeysParams) ([]store.KeyCount, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	var out []store.KeyCount
	err := s.db.query(ctx, s.sql(queueKeysSQL), []any{p.Queue}, func(scan scanFunc) error {
		var key *string
		var scheduled, running int64
		if err := scan(&key, &scheduled, &running); err != nil {
			return err
		}
		if scheduled+running <= 0 {
			return nil
		}
		c := store.KeyCount{Scheduled: int(scheduled), Running: int(running)}
		if key != nil {
			c.Key = *key
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("read the keys of queue %q", p.Queue), err)
	}
	store.SortKeyCounts(out)
	return out[:min(len(out), p.KeyLimit())], nil
}

// keyPolicyOf returns a QueueList row's stored KeyPolicy.
func keyPolicyOf(limit, rateLimit int32, ratePeriod int64, fair bool) store.KeyPolicy {
	k := store.KeyPolicy{Limit: int(limit), Fair: fair}
	if rateLimit > 0 {
		k.Rate = store.QueueRate{Limit: int(rateLimit), Period: time.Duration(ratePeriod) * time.Microsecond}
	}
	return k
}
