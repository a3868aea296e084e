package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobClaim leases up to p.Limit due jobs to p.Worker in one writing
// transaction (store.Worker). Queues are taken in the given order; within
// a Queue, jobs go in due order, ties by id, read with FOR UPDATE SKIP
// LOCKED so a row an application's transaction holds is passed over
// rather than waited for. The Queue's settings row is read FOR UPDATE, so
// its Concurrency Limit and Rate Limit counts are exact across every
// claimer.
func (s *Store) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	// Skipped Wire Names count here: a Rate Limit's Reopen looks at every
	// due job, as the In-Memory Store's does.
	due, err := s.anyRow(ctx, p.Queues, nil, `state = 1 AND scheduled_at <= {now}`)
	if err != nil {
		return nil, s.fail("claim", err)
	}
	if !due {
		// Nothing to lease, and no Rate Limit can have withheld a job.
		if p.Reopen != nil {
			*p.Reopen = 0
		}
		return nil, nil
	}
	var out []job.Job
	var reopen time.Duration
	err = s.write(ctx, "claim", func(w *wtx) error {
		out, reopen = nil, 0
		var keyReopen time.Time // the earliest end of a Key Rate window that held a job back
		expires := w.now.Add(p.LeaseDuration)
		for i, name := range p.Queues {
			if len(out) == p.Limit {
				break
			}
			if slices.Contains(p.Queues[:i], name) {
				continue
			}
			q, err := w.queueRow(name, true)
			if err != nil {
				return err
			}
			if q == nil || q.paused {
				continue
			}
			room := p.Limit - len(out)
			if q.limit > 0 {
				room = min(room, q.limit-q.running)
			}
			if room <= 0 {
				continue
			}
			budget, window := q.budget(w.now)
			if budget >= 0 {
				room = min(room, budget)
			}
			if room <= 0 {
				continue
			}
			var due []*jrow
			if q.keyed() {
				var reopen time.Time
				var ids []int64
				ids, reopen, err = w.keyedDueIDs(q, room, p.Skip)
				if !reopen.IsZero() && (keyReopen.IsZero() || reopen.Before(keyReopen)) {
					keyReopen = reopen
				}
				if err == nil {
					due, err = w.loadOrdered(ids)
				}
			} else {
				due, err = w.dueRows(name, room, p.Skip)
			}
			if err != nil {
				return err
			}
			if budget >= 0 && len(due) > 0 {
				if err := w.rateTake(q, window, len(due)); err != nil {
					return err
				}
			}
			// The claim's rows are written together before the next
			// Queue's are read (and before rateReopen reads what is left
			// due): see batch.go.
			var b batch
			for _, r := range due {
				// The Lease is set before the move, whose save writes it: a
				// move out of Scheduled clears nothing.
				r.job.Attempt++
				r.job.Worker, r.job.LeaseExpiresAt = p.Worker, expires
				e := core.Edge{From: r.job.State, To: job.StateRunning, Via: core.ViaClaim}
				if err := w.stage(&b, r, e, core.TerminalCauseAfter(e, 0), ""); err != nil {
					return err
				}
				out = append(out, r.job)
			}
			if err := w.flush(&b); err != nil {
				return err
			}
		}
		if p.Reopen != nil {
			var err error
			if reopen, err = w.rateReopen(p.Queues); err != nil {
				return err
			}
			if k := keyReopen.Sub(w.now); !keyReopen.IsZero() && (reopen == 0 || k < reopen) {
				reopen = k
			}
		}
		return loadTags(w.tx, w.ctx, out)
	})
	if err != nil {
		return nil, err
	}
	if p.Reopen != nil {
		*p.Reopen = reopen
	}
	return out, nil
}

// dueRows reads, in claim order, up to n due Scheduled jobs of the Queue
// whose Wire Name is not in skip, locking them (FOR UPDATE SKIP LOCKED).
func (w *wtx) dueRows(queue string, n int, skip []string) ([]*jrow, error) {
	var b strings.Builder
	args := []any{queue, micros(w.now)}
	b.WriteString(`SELECT ` + jobCols + ` FROM backwave_job j FORCE INDEX (backwave_job_due)
	WHERE j.queue = ? AND j.state = 1 AND j.scheduled_at <= ?`)
	if len(skip) > 0 {
		b.WriteString(` AND j.wire_name NOT IN `)
		args = inList(&b, args, skip)
	}
	b.WriteString(` ORDER BY j.scheduled_at, j.id LIMIT ? FOR UPDATE SKIP LOCKED`)
	args = append(args, n)
	rows, err := w.query(b.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("queue %q: read due jobs: %w", queue, err)
	}
	defer func() { _ = rows.Close() }()
	var out []*jrow
	for rows.Next() {
		r, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("queue %q: read due jobs: %w", queue, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queue %q: read due jobs: %w", queue, err)
	}
	return out, nil
}

// loadOrdered reads the jobs ids names, in that order; each must exist.
func (w *wtx) loadOrdered(ids []int64) ([]*jrow, error) {
	rows, err := w.loadMany(ids)
	if err != nil {
		return nil, err
	}
	out := make([]*jrow, len(ids))
	for i, id := range ids {
		if out[i] = rows[id]; out[i] == nil {
			return nil, fmt.Errorf("read job %d: %w", id, store.ErrNotFound)
		}
	}
	return out, nil
}

// queueInfo is one Queue's settings row.
type queueInfo struct {
	name       string
	paused     bool
	limit      int
	running    int
	rateLimit  int
	ratePeriod int64
	rateWindow int64
	rateCount  int
	// keyLimit, keyRateLimit and keyRatePeriod (µs) and fair are the key
	// settings (key.go).
	keyLimit      int
	keyRateLimit  int
	keyRatePeriod int64
	fair          bool
	fairTurn      int64
}

const queueCols = `name, paused, concurrency_limit, running, rate_limit, rate_period, rate_window, rate_count,
	key_limit, key_rate_limit, key_rate_period, fair_claim, fair_turn`

func scanQueue(sc scanner) (*queueInfo, error) {
	var q queueInfo
	err := sc.Scan(&q.name, &q.paused, &q.limit, &q.running, &q.rateLimit, &q.ratePeriod, &q.rateWindow, &q.rateCount,
		&q.keyLimit, &q.keyRateLimit, &q.keyRatePeriod, &q.fair, &q.fairTurn)
	return &q, err
}

// queueRow reads the Queue's settings, locking the row if lock; nil if the
// Queue is unknown.
func (w *wtx) queueRow(name string, lock bool) (*queueInfo, error) {
	q := `SELECT ` + queueCols + ` FROM backwave_queue WHERE name = ?`
	if lock {
		q += ` FOR UPDATE`
	}
	r, err := scanQueue(w.row(q, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("queue %q: settings: %w", name, err)
	}
	return r, nil
}

// rate returns the Queue's Rate Limit.
func (q *queueInfo) rate() store.QueueRate {
	return store.QueueRate{Limit: q.rateLimit, Period: time.Duration(q.ratePeriod) * time.Microsecond}
}

// budget is the Queue's Rate Limit budget at now and the window it counts
// in; -1 without a Rate.
func (q *queueInfo) budget(now time.Time) (int, time.Time) {
	r := q.rate()
	if r.IsZero() {
		return -1, time.Time{}
	}
	var window time.Time
	if q.rateWindow != 0 || q.rateCount != 0 {
		window = fromMicros(q.rateWindow)
	}
	return r.Budget(window, q.rateCount, now)
}

// started is how many jobs started in the Rate's window holding now.
func (q *queueInfo) started(now time.Time) int {
	r := q.rate()
	if r.IsZero() || !fromMicros(q.rateWindow).Equal(r.WindowStart(now)) {
		return 0
	}
	return q.rateCount
}

// rateTake counts n claims in window.
func (w *wtx) rateTake(q *queueInfo, window time.Time, n int) error {
	count := n
	if fromMicros(q.rateWindow).Equal(window) {
		count += q.rateCount
	}
	if _, err := w.exec(`UPDATE backwave_queue SET rate_window = ?, rate_count = ? WHERE name = ?`, micros(window), count, q.name); err != nil {
		return fmt.Errorf("queue %q: count rate: %w", q.name, err)
	}
	q.rateWindow, q.rateCount = micros(window), count
	return nil
}

// rateReopen is how long until the earliest window ends of a rated,
// unpaused Queue among queues whose budget is spent while it still has a
// claimable job; 0 when none.
func (w *wtx) rateReopen(queues []string) (time.Duration, error) {
	var reopen time.Time
	for i, name := range queues {
		if slices.Contains(queues[:i], name) {
			continue
		}
		q, err := w.queueRow(name, false)
		if err != nil {
			return 0, err
		}
		if q == nil || q.paused {
			continue
		}
		budget, window := q.budget(w.now)
		if budget != 0 {
			continue
		}
		var one int
		err = w.row(`SELECT 1 FROM backwave_job WHERE queue = ? AND state = 1 AND scheduled_at <= ? LIMIT 1`, name, micros(w.now)).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("queue %q: %w", name, err)
		}
		if ends := window.Add(q.rate().Period); reopen.IsZero() || ends.Before(reopen) {
			reopen = ends
		}
	}
	if reopen.IsZero() {
		return 0, nil
	}
	return reopen.Sub(w.now), nil
}

// notFound turns sql.ErrNoRows into store.ErrNotFound for job id.
func notFound(err error, id job.ID) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	return err
}

// inList writes a parenthesized list of one placeholder per value to b and
// returns args with the values appended, in order: "(?,?,?)".
func inList[T any](b *strings.Builder, args []any, values []T) []any {
	b.WriteByte('(')
	for i, v := range values {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('?')
		args = append(args, v)
	}
	b.WriteByte(')')
	return args
}
