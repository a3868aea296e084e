package mariadb

import (
	"context"
	"time"

	"github.com/backwave/backwave/store"
)

// keySet applies one key-policy setting and its audit record in one
// writing transaction, the Queue's row locked: check sees the Queue and
// may refuse, storing nothing.
func (s *Store) keySet(ctx context.Context, op, queue, set string, args []any, a store.Actor, action store.AuditAction, detail string,
	check func(q *queueInfo) (forget bool, err error)) error {
	return s.write(ctx, op, func(w *wtx) error {
		if err := w.knowQueue(queue); err != nil {
			return err
		}
		q, err := w.queueRow(queue, true)
		if err != nil {
			return err
		}
		forget, err := check(q)
		if err != nil {
			return err
		}
		if forget {
			// The key windows go; each key's row stays, with its Fair
			// Claim turn, so the rotation carries on (as memstore's).
			if _, err := w.exec(`UPDATE backwave_queue_key SET rate_window = 0, rate_count = 0 WHERE queue = ? AND (rate_window <> 0 OR rate_count <> 0)`, queue); err != nil {
				return err
			}
		}
		if _, err := w.exec(`UPDATE backwave_queue SET `+set+` WHERE name = ?`, append(args, queue)...); err != nil {
			return err
		}
		w.hint(queue)
		return w.record(a, action, 0, queue, detail)
	})
}

// QueueSetKeyLimit sets the Queue's Key Limit (store.Queues): one above the
// Queue's Concurrency Limit is refused (store.ValidateKeyLimit) under the
// Queue's row lock.
func (s *Store) QueueSetKeyLimit(ctx context.Context, p store.QueueSetKeyLimitParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.keySet(ctx, "set queue key limit", p.Queue, `key_limit = ?`, []any{p.Limit}, p.Actor,
		store.AuditQueueSetKeyLimit, store.KeyLimitDetail(p.Limit),
		func(q *queueInfo) (bool, error) { return false, store.ValidateKeyLimit(p.Limit, q.limit) })
}

// QueueSetKeyRate sets the Queue's Key Rate (store.Queues): a new Period or
// a removed Key Rate starts every key's count afresh.
func (s *Store) QueueSetKeyRate(ctx context.Context, p store.QueueSetKeyRateParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	period := p.Rate.Period.Microseconds()
	return s.keySet(ctx, "set queue key rate", p.Queue, `key_rate_limit = ?, key_rate_period = ?`, []any{p.Rate.Limit, period}, p.Actor,
		store.AuditQueueSetKeyRate, store.KeyRateDetail(p.Rate),
		func(q *queueInfo) (bool, error) { return q.keyRatePeriod != period || p.Rate.IsZero(), nil })
}

// QueueSetFairClaim turns the Queue's Fair Claim on or off (store.Queues).
func (s *Store) QueueSetFairClaim(ctx context.Context, p store.QueueSetFairClaimParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.keySet(ctx, "set queue fair claim", p.Queue, `fair_claim = ?`, []any{p.Fair}, p.Actor,
		store.AuditQueueSetFairClaim, store.FairClaimDetail(p.Fair),
		func(*queueInfo) (bool, error) { return false, nil })
}

// QueueKeys returns the Queue's Concurrency Keys with the most Scheduled
// and Running jobs together, most first (store.SortKeyCounts), from the key
// counters the writing transactions keep (backwave_job_key_count), never
// the job table; the jobs without a key are the Queue's own counts less
// the keyed ones.
func (s *Store) QueueKeys(ctx context.Context, p store.QueueKeysParams) ([]store.KeyCount, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.KeyCount
	err := s.read(ctx, "read queue keys", func(q querier, _ time.Time) error {
		out = nil
		rows, err := q.QueryContext(ctx, `SELECT concurrency_key, SUM(IF(state = 1, n, 0)), SUM(IF(state = 3, n, 0))
			FROM backwave_job_key_count WHERE queue = ? AND state IN (1, 3) GROUP BY concurrency_key
			UNION ALL
			SELECT '',
				COALESCE((SELECT n FROM backwave_job_count WHERE queue = ? AND state = 1), 0)
					- COALESCE((SELECT SUM(n) FROM backwave_job_key_count WHERE queue = ? AND state = 1), 0),
				COALESCE((SELECT n FROM backwave_job_count WHERE queue = ? AND state = 3), 0)
					- COALESCE((SELECT SUM(n) FROM backwave_job_key_count WHERE queue = ? AND state = 3), 0)`,
			p.Queue, p.Queue, p.Queue, p.Queue, p.Queue)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var c store.KeyCount
			var scheduled, running int64
			if err := rows.Scan(&c.Key, &scheduled, &running); err != nil {
				return err
			}
			if scheduled+running > 0 {
				c.Scheduled, c.Running = int(scheduled), int(running)
				out = append(out, c)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	store.SortKeyCounts(out)
	return out[:min(len(out), p.KeyLimit())], nil
}
