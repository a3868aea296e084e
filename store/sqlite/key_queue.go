package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/backwave/backwave/store"
)

// The key-policy Operator Actions and the Monitor's top keys.
const (
	// sqlQueueKeyRead reads Queue ?1's Concurrency Limit and Key Rate
	// period.
	sqlQueueKeyRead = `SELECT concurrency_limit, key_rate_period FROM backwave_queue WHERE name = ?1`
	// sqlKeySet writes the key settings ?2 to ?5 of Queue ?1 (NULL keeps a
	// column).
	sqlKeySet = `UPDATE backwave_queue SET key_limit = COALESCE(?2, key_limit), key_rate_limit = COALESCE(?3, key_rate_limit),
		key_rate_period = COALESCE(?4, key_rate_period), fair_claim = COALESCE(?5, fair_claim)
	WHERE name = ?1`
	// sqlKeyForget forgets every key window of Queue ?1. Each key's row
	// stays, with its Fair Claim turn: a new Key Rate period must not move
	// a key to the head of the rotation as if it had never been served.
	sqlKeyForget = `UPDATE backwave_queue_key SET rate_window = NULL, rate_count = 0 WHERE queue = ?1 AND (rate_window IS NOT NULL OR rate_count <> 0)`
	// sqlQueueKeys reads the key counters of Queue ?1, Scheduled and Running
	// per key, and then (key NULL) the Queue's own counts less the keyed
	// ones: its jobs without a key.
	sqlQueueKeys = `SELECT concurrency_key, SUM(CASE WHEN state = 1 THEN n ELSE 0 END), SUM(CASE WHEN state = 3 THEN n ELSE 0 END)
	FROM backwave_job_key_count WHERE queue = ?1 AND state IN (1, 3) GROUP BY concurrency_key
	UNION ALL
	SELECT NULL,
		COALESCE((SELECT n FROM backwave_job_count WHERE queue = ?1 AND state = 1), 0)
			- COALESCE((SELECT SUM(n) FROM backwave_job_key_count WHERE queue = ?1 AND state = 1), 0),
		COALESCE((SELECT n FROM backwave_job_count WHERE queue = ?1 AND state = 3), 0)
			- COALESCE((SELECT SUM(n) FROM backwave_job_key_count WHERE queue = ?1 AND state = 3), 0)`
)

// keyArg is a Concurrency Key as a statement argument: NULL for none.
func keyArg(key string) any {
	if key == "" {
		return nil
	}
	return key
}

// keySet applies one key-policy setting and its audit record in one write
// transaction: check sees the Queue's Concurrency Limit and Key Rate
// period (µs) and may refuse, storing nothing.
func (s *Store) keySet(ctx context.Context, op, queue string, args [4]any, a store.Actor, action store.AuditAction, detail string,
	check func(limit int, period int64) (forget bool, err error)) error {
	err := s.write(ctx, op, func(tx *sql.Tx) error {
		r := s.schema.Rename
		if _, err := tx.ExecContext(ctx, s.q.knowQueue, queue); err != nil {
			return err
		}
		var limit int
		var period int64
		if err := tx.QueryRowContext(ctx, r(sqlQueueKeyRead), queue).Scan(&limit, &period); err != nil {
			return err
		}
		forget, err := check(limit, period)
		if err != nil {
			return err
		}
		if forget {
			if _, err := tx.ExecContext(ctx, r(sqlKeyForget), queue); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, r(sqlKeySet), queue, args[0], args[1], args[2], args[3]); err != nil {
			return err
		}
		return s.audit(ctx, tx, s.clock.Now(), a, action, 0, queue, detail)
	})
	if err == nil {
		s.hints.Announce([]string{queue})
	}
	return err
}

// QueueSetKeyLimit sets the Queue's Key Limit (0 removes it), making the
// Queue known if it was not, in one write transaction with its audit
// record. A Key Limit above the Queue's Concurrency Limit is refused
// (store.ValidateKeyLimit) and nothing is stored.
func (s *Store) QueueSetKeyLimit(ctx context.Context, p store.QueueSetKeyLimitParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.keySet(ctx, "set queue key limit", p.Queue, [4]any{p.Limit, nil, nil, nil}, p.Actor,
		store.AuditQueueSetKeyLimit, store.KeyLimitDetail(p.Limit),
		func(limit int, _ int64) (bool, error) { return false, store.ValidateKeyLimit(p.Limit, limit) })
}

// QueueSetKeyRate sets the Queue's Key Rate (the zero QueueRate removes
// it), making the Queue known if it was not, in one write transaction with
// its audit record. A new Limit under the same Period keeps every key's
// window count; a new Period or a removed Key Rate forgets them.
func (s *Store) QueueSetKeyRate(ctx context.Context, p store.QueueSetKeyRateParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	period := p.Rate.Period.Microseconds()
	return s.keySet(ctx, "set queue key rate", p.Queue, [4]any{nil, p.Rate.Limit, period, nil}, p.Actor,
		store.AuditQueueSetKeyRate, store.KeyRateDetail(p.Rate),
		func(_ int, old int64) (bool, error) { return old != period || p.Rate.IsZero(), nil })
}

// QueueSetFairClaim turns the Queue's Fair Claim on or off, making the
// Queue known if it was not, in one write transaction with its audit
// record.
func (s *Store) QueueSetFairClaim(ctx context.Context, p store.QueueSetFairClaimParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.keySet(ctx, "set queue fair claim", p.Queue, [4]any{nil, nil, nil, p.Fair}, p.Actor,
		store.AuditQueueSetFairClaim, store.FairClaimDetail(p.Fair),
		func(int, int64) (bool, error) { return false, nil })
}

// QueueKeys returns the Queue's Concurrency Keys with the most Scheduled
// and Running jobs together, most first (store.SortKeyCounts), from the
// key counters the triggers of migration 0016 keep, never the job table.
func (s *Store) QueueKeys(ctx context.Context, p store.QueueKeysParams) ([]store.KeyCount, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.KeyCount
	err := s.read(ctx, "read queue keys", func(tx *sql.Tx) error {
		out = nil
		rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlQueueKeys), p.Queue)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var key sql.NullString
			var scheduled, running int64
			if err := rows.Scan(&key, &scheduled, &running); err != nil {
				return fmt.Errorf("scan: %w", err)
			}
			if scheduled+running > 0 {
				out = append(out, store.KeyCount{Key: key.String, Scheduled: int(scheduled), Running: int(running)})
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
