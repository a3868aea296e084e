package mariadb

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// QueuePause stops claims from the Queue (store.Queues).
func (s *Store) QueuePause(ctx context.Context, p store.QueueParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "pause queue", func(w *wtx) error {
		if err := w.knowQueue(p.Queue); err != nil {
			return err
		}
		if _, err := w.exec(`UPDATE backwave_queue SET paused = 1 WHERE name = ?`, p.Queue); err != nil {
			return err
		}
		return w.record(p.Actor, store.AuditQueuePause, 0, p.Queue, "")
	})
}

// QueueResume lets claims from the Queue start again (store.Queues).
func (s *Store) QueueResume(ctx context.Context, p store.QueueParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "resume queue", func(w *wtx) error {
		if err := w.knowQueue(p.Queue); err != nil {
			return err
		}
		if _, err := w.exec(`UPDATE backwave_queue SET paused = 0 WHERE name = ?`, p.Queue); err != nil {
			return err
		}
		w.hint(p.Queue)
		return w.record(p.Actor, store.AuditQueueResume, 0, p.Queue, "")
	})
}

// QueueSetLimit sets the Queue's Concurrency Limit (store.Queues).
func (s *Store) QueueSetLimit(ctx context.Context, p store.QueueSetLimitParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "set queue limit", func(w *wtx) error {
		if err := w.knowQueue(p.Queue); err != nil {
			return err
		}
		if _, err := w.exec(`UPDATE backwave_queue SET concurrency_limit = ? WHERE name = ?`, p.Limit, p.Queue); err != nil {
			return err
		}
		w.hint(p.Queue)
		return w.record(p.Actor, store.AuditQueueSetLimit, 0, p.Queue, store.LimitDetail(p.Limit))
	})
}

// QueueSetRate sets the Queue's Rate Limit (store.Queues): a new Period or
// a removed Rate starts the count afresh.
func (s *Store) QueueSetRate(ctx context.Context, p store.QueueSetRateParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "set queue rate", func(w *wtx) error {
		if err := w.knowQueue(p.Queue); err != nil {
			return err
		}
		if _, err := w.exec(`UPDATE backwave_queue SET
			rate_window = IF(rate_period = ?, rate_window, 0), rate_count = IF(rate_period = ?, rate_count, 0),
			rate_limit = ?, rate_period = ? WHERE name = ?`,
			p.Rate.Period.Microseconds(), p.Rate.Period.Microseconds(), p.Rate.Limit, p.Rate.Period.Microseconds(), p.Queue); err != nil {
			return err
		}
		w.hint(p.Queue)
		return w.record(p.Actor, store.AuditQueueSetRate, 0, p.Queue, store.RateDetail(p.Rate))
	})
}

// QueueList returns every known Queue with its settings and counts,
// ordered by name (store.Queues).
func (s *Store) QueueList(ctx context.Context) ([]store.QueueInfo, error) {
	var out []store.QueueInfo
	err := s.read(ctx, "list queues", func(q querier, now time.Time) error {
		out = nil
		rows, err := q.QueryContext(ctx, `SELECT `+queueCols+` FROM backwave_queue ORDER BY name`)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			r, err := scanQueue(rows)
			if err != nil {
				return err
			}
			out = append(out, store.QueueInfo{Name: r.name, Paused: r.paused, Limit: r.limit, Running: r.running,
				Rate: r.rate(), RateStarted: r.started(now),
				Keys: store.KeyPolicy{Limit: r.keyLimit, Rate: r.keyRate(), Fair: r.fair}})
		}
		return rows.Err()
	})
	return out, err
}

// QueueRemove removes an empty Queue with its settings and per-key rows
// (store.Queues). Every write holds the writer row, so no insert can add a
// job between the count and the delete.
func (s *Store) QueueRemove(ctx context.Context, p store.QueueParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "remove queue", func(w *wtx) error {
		var known int
		var jobs int64
		if err := w.row(`SELECT (SELECT COUNT(*) FROM backwave_queue WHERE name = ?),
			(SELECT COALESCE(SUM(n), 0) FROM backwave_job_count WHERE queue = ?)`, p.Queue, p.Queue).Scan(&known, &jobs); err != nil {
			return err
		}
		if known == 0 {
			return fmt.Errorf("queue %s: %w", store.Echo(p.Queue), store.ErrNotFound)
		}
		if err := store.CheckQueueEmpty(p.Queue, int(jobs)); err != nil {
			return err
		}
		for _, table := range []string{"backwave_job_count", "backwave_job_key_count", "backwave_queue_key"} {
			if _, err := w.exec(`DELETE FROM `+table+` WHERE queue = ?`, p.Queue); err != nil {
				return err
			}
		}
		if _, err := w.exec(`DELETE FROM backwave_queue WHERE name = ?`, p.Queue); err != nil {
			return err
		}
		return w.record(p.Actor, store.AuditQueueRemove, 0, p.Queue, "")
	})
}
