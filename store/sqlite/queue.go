package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/backwave/backwave/store"
)

// QueuePause stops claims from the Queue, making it known if it was not.
// Running jobs keep their Leases.
func (s *Store) QueuePause(ctx context.Context, p store.QueueParams) error {
	return s.setPaused(ctx, p, true)
}

// QueueResume lets claims from the Queue start again, making it known if it
// was not.
func (s *Store) QueueResume(ctx context.Context, p store.QueueParams) error {
	return s.setPaused(ctx, p, false)
}

func (s *Store) setPaused(ctx context.Context, p store.QueueParams, paused bool) error {
	if err := p.Validate(); err != nil {
		return err
	}
	what := "resume queue"
	if paused {
		what = "pause queue"
	}
	action := store.AuditQueueResume
	if paused {
		action = store.AuditQueuePause
	}
	err := s.write(ctx, what, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q.pause, p.Queue, paused); err != nil {
			return err
		}
		return s.audit(ctx, tx, s.clock.Now(), p.Actor, action, 0, p.Queue, "")
	})
	if err == nil && !paused {
		s.hints.Announce([]string{p.Queue})
	}
	return err
}

// QueueSetLimit sets the Queue's cluster-wide Concurrency Limit (0 removes
// it), making the Queue known if it was not. A limit below the Running count
// revokes no Lease; claims from the Queue stop until Running drops below it.
func (s *Store) QueueSetLimit(ctx context.Context, p store.QueueSetLimitParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	err := s.write(ctx, "set queue limit", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q.setLimit, p.Queue, p.Limit); err != nil {
			return err
		}
		return s.audit(ctx, tx, s.clock.Now(), p.Actor, store.AuditQueueSetLimit, 0, p.Queue, store.LimitDetail(p.Limit))
	})
	if err == nil {
		s.hints.Announce([]string{p.Queue})
	}
	return err
}

// QueueList returns every known Queue — named by a job or by a setting —
// with its settings and Running count, ordered by name (byte order).
func (s *Store) QueueList(ctx context.Context) ([]store.QueueInfo, error) {
	out := []store.QueueInfo{}
	now := s.clock.Now()
	err := s.read(ctx, "list queues", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.q.queueList)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var q store.QueueInfo
			var r rateRow
			var k keySettings
			if err := rows.Scan(&q.Name, &q.Paused, &q.Limit, &r.limit, &r.period, &r.window, &r.count, &q.Running,
				&k.limit, &k.rateLimit, &k.ratePeriod, &k.fair); err != nil {
				return fmt.Errorf("scan: %w", err)
			}
			q.Rate, q.RateStarted = r.rate(), r.started(now)
			q.Keys = store.KeyPolicy{Limit: k.limit, Rate: k.rate(), Fair: k.fair}
			out = append(out, q)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// queueRemoveQueries are QueueRemove's statements renamed to one Schema
// Name: count says whether the Queue is known and how many jobs it holds
// (from the counters the triggers and the claim keep exact in every write
// transaction); the others delete its rows, one table each.
type queueRemoveQueries struct {
	count, counts, keyCounts, keys, queue string
}

func newQueueRemoveQueries(n schemaName) queueRemoveQueries {
	r := n.Rename
	return queueRemoveQueries{
		count: r(`SELECT (SELECT COUNT(*) FROM backwave_queue WHERE name = ?1),
		(SELECT COALESCE(SUM(n), 0) FROM backwave_job_count WHERE queue = ?1)`),
		counts:    r(`DELETE FROM backwave_job_count WHERE queue = ?1`),
		keyCounts: r(`DELETE FROM backwave_job_key_count WHERE queue = ?1`),
		keys:      r(`DELETE FROM backwave_queue_key WHERE queue = ?1`),
		queue:     r(`DELETE FROM backwave_queue WHERE name = ?1`),
	}
}

// QueueRemove removes an empty Queue with its settings and per-key rows.
// The single write connection serializes it against every insert, so the
// count it reads holds until it commits.
func (s *Store) QueueRemove(ctx context.Context, p store.QueueParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "remove queue", func(tx *sql.Tx) error {
		var known, jobs int
		if err := tx.QueryRowContext(ctx, s.q.queueRemove.count, p.Queue).Scan(&known, &jobs); err != nil {
			return err
		}
		if known == 0 {
			return fmt.Errorf("queue %s: %w", store.Echo(p.Queue), store.ErrNotFound)
		}
		if err := store.CheckQueueEmpty(p.Queue, jobs); err != nil {
			return err
		}
		rq := s.q.queueRemove
		for _, stmt := range []string{rq.counts, rq.keyCounts, rq.keys, rq.queue} {
			if _, err := tx.ExecContext(ctx, stmt, p.Queue); err != nil {
				return err
			}
		}
		return s.audit(ctx, tx, s.clock.Now(), p.Actor, store.AuditQueueRemove, 0, p.Queue, "")
	})
}
