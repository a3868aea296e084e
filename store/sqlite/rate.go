package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// The Rate Limit statements (see Rate Limit in the store package doc). A
// claim reads a Queue's Rate with its other settings (sqlQueueSettings),
// counts what it leased with sqlRateTake and, after its last Queue, reads
// the Rates of every Queue it named to say when an exhausted window ends
// (sqlRateOf, sqlRateDue). All of it runs in the claim's write
// transaction, so no other claim on any process interleaves.
const (
	// sqlRateTake counts ?3 claims in the window starting at ?2 (µs): added
	// to the count if that is the window counted, else the count of a new
	// window.
	sqlRateTake = `UPDATE backwave_queue
	SET rate_count = CASE WHEN rate_window = ?2 THEN rate_count + ?3 ELSE ?3 END, rate_window = ?2
	WHERE name = ?1`
	// sqlSetRate sets a Queue's Rate; the window's count survives a new
	// Limit under the same Period, and nothing else.
	sqlSetRate = `INSERT INTO backwave_queue (name, rate_limit, rate_period) VALUES (?1, ?2, ?3)
	ON CONFLICT (name) DO UPDATE SET rate_limit = excluded.rate_limit, rate_period = excluded.rate_period,
		rate_window = CASE WHEN rate_period = excluded.rate_period THEN rate_window END,
		rate_count = CASE WHEN rate_period = excluded.rate_period THEN rate_count ELSE 0 END`
	// sqlRateOf reads the Rate and count of every unpaused rated Queue
	// named in the JSON array ?1.
	sqlRateOf = `SELECT name, rate_limit, rate_period, rate_window, rate_count FROM backwave_queue
	WHERE name IN (SELECT value FROM json_each(?1)) AND paused = 0 AND rate_limit > 0`
	// sqlRateDue says whether Queue ?1 has a job due at ?2.
	sqlRateDue = `SELECT EXISTS (SELECT 1 FROM backwave_job WHERE queue = ?1 AND state = 1 AND scheduled_at <= ?2)`
)

// rateQueries are the Rate Limit statements renamed to one Schema Name.
type rateQueries struct {
	take, set, of, due string
}

func newRateQueries(n schemaName) rateQueries {
	r := n.Rename
	return rateQueries{take: r(sqlRateTake), set: r(sqlSetRate), of: r(sqlRateOf), due: r(sqlRateDue)}
}

// rateRow is a Queue's stored Rate and its window's count.
type rateRow struct {
	limit  int
	period int64 // µs
	window sql.NullInt64
	count  int
}

// rate returns the stored Rate; zero for none.
func (r rateRow) rate() store.QueueRate {
	if r.limit <= 0 {
		return store.QueueRate{}
	}
	return store.QueueRate{Limit: r.limit, Period: time.Duration(r.period) * time.Microsecond}
}

// started returns how many claims the window holding now counted.
func (r rateRow) started(now time.Time) int {
	rate := r.rate()
	if rate.IsZero() || !r.window.Valid || r.window.Int64 != micros(rate.WindowStart(now)) {
		return 0
	}
	return r.count
}

// budget applies store.QueueRate.Budget to the row at now: how many
// jobs a claim may take (-1 without a Rate) and the window start (µs) they
// count in.
func (r rateRow) budget(now time.Time) (int, int64) {
	rate := r.rate()
	if rate.IsZero() {
		return -1, 0
	}
	var counted time.Time
	if r.window.Valid {
		counted = fromMicros(r.window.Int64)
	}
	n, window := rate.Budget(counted, r.count, now)
	return n, micros(window)
}

// rateTake counts n claims from queue in the window starting at window (µs).
func (s *Store) rateTake(ctx context.Context, tx *sql.Tx, queue string, window int64, n int64) error {
	if _, err := s.exec(ctx, tx, s.q.rate.take, queue, window, n); err != nil {
		return fmt.Errorf("queue %q: count rate: %w", queue, err)
	}
	return nil
}

// rateReopen is a claim's Reopen, read in its transaction after its last
// Queue: how long from now until the earliest end of a window that left a
// rated, unpaused Queue of queues no budget while it still has a due job;
// zero if none.
func (s *Store) rateReopen(ctx context.Context, tx *sql.Tx, queues []string, now time.Time) (time.Duration, error) {
	names, err := json.Marshal(queues)
	if err != nil {
		return 0, fmt.Errorf("encode queue names: %w", err)
	}
	rows, err := s.query(ctx, tx, s.q.rate.of, string(names))
	if err != nil {
		return 0, fmt.Errorf("read rates: %w", err)
	}
	type spent struct {
		queue string
		ends  int64
	}
	var exhausted []spent
	for rows.Next() {
		var name string
		var r rateRow
		if err := rows.Scan(&name, &r.limit, &r.period, &r.window, &r.count); err != nil {
			_ = rows.Close()
			return 0, fmt.Errorf("read rates: %w", err)
		}
		if n, window := r.budget(now); n == 0 {
			exhausted = append(exhausted, spent{queue: name, ends: window + r.period})
		}
	}
	if err := rows.Close(); err != nil {
		return 0, fmt.Errorf("read rates: %w", err)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read rates: %w", err)
	}
	var reopen int64
	found := false
	for _, e := range exhausted {
		if found && e.ends >= reopen {
			continue
		}
		var due bool
		if err := s.queryRow(ctx, tx, s.q.rate.due, []any{e.queue, micros(now)}, &due); err != nil {
			return 0, fmt.Errorf("queue %q: read due: %w", e.queue, err)
		}
		if due {
			reopen, found = e.ends, true
		}
	}
	if !found {
		return 0, nil
	}
	// From now as stored, to the microsecond, as every instant here is.
	return time.Duration(reopen-micros(now)) * time.Microsecond, nil
}

// QueueSetRate sets the Queue's Rate Limit (the zero QueueRate removes it),
// making the Queue known if it was not, in one write transaction with its
// audit record. A new Limit under the same Period keeps the window's count;
// a new Period or a removed Rate forgets it.
func (s *Store) QueueSetRate(ctx context.Context, p store.QueueSetRateParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	err := s.write(ctx, "set queue rate", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q.rate.set, p.Queue, p.Rate.Limit, p.Rate.Period.Microseconds()); err != nil {
			return err
		}
		return s.audit(ctx, tx, s.clock.Now(), p.Actor, store.AuditQueueSetRate, 0, p.Queue, store.RateDetail(p.Rate))
	})
	if err == nil {
		s.hints.Announce([]string{p.Queue})
	}
	return err
}
