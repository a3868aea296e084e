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
