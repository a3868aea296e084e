package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// The Rate Limit (see Rate Limit in the store package doc) rides on the
// claim's own statements. claimLockSQL locks the settings row of every
// claimed Queue with a Rate as it does for a Concurrency Limit, so claims
// that may count starts against one Queue's window run one at a time;
// claimSQL reads the window's count under that lock, leases no more than
// the Rate leaves, and counts what it leased in the same statement
// (rateWindowSQL is the window rule in SQL). A Rate set while a claim is
// under way applies from the next claim, like a Concurrency Limit; the
// claim's starts are still counted.
//
// A claim's now is its transaction's start, taken before it waited for the
// lock, so a claim that waited may read a window count from a later window
// than its own now: store.QueueRate.Budget gives it nothing, and the
// SQL here does the same.

// rateWindowSQL is the start (µs since the Unix epoch) of the fixed window
// of a Queue q's rate_period holding the instant now.us: now.us rounded
// down to a multiple of the period.
const rateWindowSQL = `(now.us - ((now.us % q.rate_period) + q.rate_period) % q.rate_period)`

// rateReopenSQL is a claim's Reopen, run in its transaction after claimSQL:
// how many µs from now until the earliest end of a window that leaves a
// rated, unpaused Queue of $2 no budget while it still has a due job; 0 if
// none.
var rateReopenSQL = `WITH now AS (SELECT t, (extract(epoch FROM t) * 1000000)::bigint AS us
                     FROM (SELECT coalesce($1::timestamptz, now()) AS t) c),
spent AS (
    SELECT q.name, q.rate_window + q.rate_period AS ends
    FROM backwave.queue q, now
    WHERE q.name = ANY($2::text[]) AND NOT q.paused AND q.rate_limit > 0
      AND (q.rate_window > ` + rateWindowSQL + `
           OR (q.rate_window = ` + rateWindowSQL + ` AND q.rate_count >= q.rate_limit))
)
SELECT coalesce(min(s.ends) - min(now.us), 0)::bigint
FROM spent s, now
WHERE EXISTS (SELECT 1 FROM backwave.job d
              WHERE d.queue = s.name AND d.state = 'scheduled' AND d.scheduled_at <= now.t)`

// queueSetRateSQL sets a Queue's Rate, making the Queue known if it was
// not; the window's count survives a new Limit under the same Period, and
// nothing else. It sends a NOTIFY ($4) unless the Queue is paused.
const queueSetRateSQL = `WITH upsert AS (
    INSERT INTO backwave.queue AS q (name, rate_limit, rate_period)
    VALUES ($1::text, $2::int, $3::bigint)
    ON CONFLICT (name) DO UPDATE
    SET rate_limit = excluded.rate_limit, rate_period = excluded.rate_period,
        rate_window = CASE WHEN q.rate_period = excluded.rate_period THEN q.rate_window END,
        rate_count = CASE WHEN q.rate_period = excluded.rate_period THEN q.rate_count ELSE 0 END
    RETURNING q.name, q.paused
),
hint AS (SELECT pg_notify('backwave.hint', u.name) FROM upsert u WHERE $4::bool AND NOT u.paused)
SELECT (SELECT count(*) FROM hint) FROM upsert`

// QueueSetRate sets the Queue's Rate Limit (the zero QueueRate removes it),
// making the Queue known if it was not, in one transaction with its audit
// record. A new Limit under the same Period keeps the window's count; a new
// Period or a removed Rate forgets it.
func (s *Store) QueueSetRate(ctx context.Context, p store.QueueSetRateParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	err := s.db.inTx(ctx, func(q querier) error {
		args := []any{p.Queue, int32(p.Rate.Limit), p.Rate.Period.Microseconds(), !s.opts.DisableNotify}
		if err := q.query(ctx, s.sql(queueSetRateSQL), args, nil); err != nil {
			return err
		}
		return s.audit(ctx, q, p.Actor, store.AuditQueueSetRate, 0, p.Queue, store.RateDetail(p.Rate))
	})
	return s.wrap(fmt.Sprintf("set the rate of queue %q", p.Queue), err)
}

// rateOf returns the stored Rate of a QueueList row: zero for none.
func rateOf(limit int32, period int64) store.QueueRate {
	if limit <= 0 {
		return store.QueueRate{}
	}
	return store.QueueRate{Limit: int(limit), Period: time.Duration(period) * time.Microsecond}
}
