package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobClaim leases up to p.Limit due jobs to p.Worker in one write
// transaction, charging each one's next Attempt and running its Lease until
// the store's now plus p.LeaseDuration. Queues are taken in the given order
// (a Queue named twice counts once); within a Queue, jobs go in due order,
// ties by id. Paused Queues are skipped. For a Queue with a Concurrency
// Limit the Running count is read inside the same transaction, under the
// file's write lock, so the limit holds across every process on the file;
// so is a Rate Limit's window count, which the claim updates there too.
// The returned jobs are in claim order.
func (s *Store) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []job.Job
	var reopen time.Duration
	err := s.write(ctx, "claim", func(tx *sql.Tx) error {
		out, reopen = nil, 0
		var counts countDeltas
		now := s.clock.Now()
		expires := micros(now.Add(p.LeaseDuration))
		// unread says whether some named Queue's settings were not read
		// (the batch filled first); anyRated whether a read one has a Rate.
		// Only then can the claim have a Reopen to read.
		unread, anyRated := false, false
		var keyReopen time.Time // the earliest end of a Key Rate window that held a job back
		for i, name := range p.Queues {
			if len(out) == p.Limit {
				unread = true
				break
			}
			if slices.Contains(p.Queues[:i], name) {
				continue
			}
			room, rate, keys, err := s.room(ctx, tx, name, p.Limit-len(out), now)
			if err != nil {
				return err
			}
			anyRated = anyRated || rate.rated
			if room <= 0 {
				continue
			}
			from := len(out)
			var pick store.KeyPick
			if keys.keyed() {
				var ids []int64
				if ids, pick, err = s.claimKeyed(ctx, tx, name, keys, now, room, p.Skip); err != nil {
					return err
				}
				if !pick.Reopen.IsZero() && (keyReopen.IsZero() || pick.Reopen.Before(keyReopen)) {
					keyReopen = pick.Reopen
				}
				if len(ids) > 0 {
					if out, err = s.claimKeyedRows(ctx, tx, ids, out, room, name, p.Worker, expires); err != nil {
						return fmt.Errorf("queue %q: %w", name, err)
					}
				}
			} else {
				rows, err := s.claimDueRows(ctx, tx, name, now, room, p.Skip)
				if err != nil {
					return fmt.Errorf("queue %q: %w", name, err)
				}
				if out, err = scanClaimed(rows, out, room, name, p.Worker, expires); err != nil {
					return fmt.Errorf("queue %q: %w", name, err)
				}
			}
			claimed := int64(len(out) - from)
			if claimed == 0 {
				continue
			}
			res, err := s.exec(ctx, tx, s.q.claim, string(p.Worker), expires, jobIDs(out[from:]))
			if err != nil {
				return fmt.Errorf("queue %q: %w", name, err)
			}
			if n, err := res.RowsAffected(); err != nil || n != claimed {
				return fmt.Errorf("queue %q: leased %d of the %d jobs read due (%v)", name, n, claimed, err)
			}
			if rate.rated {
				if err := s.rateTake(ctx, tx, name, rate.window, claimed); err != nil {
					return err
				}
			}
			if keys.keyed() {
				if err := s.keyTake(ctx, tx, name, keys, pick); err != nil {
					return err
				}
			}
			counts.move([]byte(name), codeScheduled, codeRunning, claimed)
		}
		if p.Reopen != nil && (unread || anyRated) {
			var err error
			if reopen, err = s.rateReopen(ctx, tx, p.Queues, now); err != nil {
				return err
			}
		}
		if k := keyReopen.Sub(now); !keyReopen.IsZero() && (reopen == 0 || k < reopen) {
			reopen = k
		}
		if len(out) == 0 {
			return nil
		}
		if err := s.addCounts(ctx, tx, counts); err != nil {
			return err
		}
		if s.opts.History.Records() {
			var entries jsonObject
			for _, j := range out {
				entries.int(int64(j.ID), int64(j.Attempt))
			}
			if _, err := s.exec(ctx, tx, s.q.transitionsOf, entries.String(), micros(now),
				codeScheduled, codeRunning, viaCode(core.ViaClaim)); err != nil {
				return fmt.Errorf("record transitions: %w", err)
			}
			for _, j := range out {
				if err := s.trim(ctx, tx, int64(j.ID), j.Attempt); err != nil {
					return err
				}
			}
		}
		return s.claimedTags(ctx, tx, out)
	})
	if err != nil {
		return nil, err
	}
	if p.Reopen != nil {
		*p.Reopen = reopen
	}
	return out, nil
}

// claimedTags reads the Tags of the claimed jobs, in tx: one probe of the
// Tag table over the jobs' id range first, since most jobs carry none,
// then one query for them all.
func (s *Store) claimedTags(ctx context.Context, tx *sql.Tx, jobs []job.Job) error {
	lo, hi := jobs[0].ID, jobs[0].ID
	for _, j := range jobs[1:] {
		lo, hi = min(lo, j.ID), max(hi, j.ID)
	}
	var tagged bool
	if err := s.queryRow(ctx, tx, s.q.tagsIn, []any{int64(lo), int64(hi)}, &tagged); err != nil {
		return fmt.Errorf("read tags: %w", err)
	}
	if !tagged {
		return nil
	}
	index, ids := indexJobs(jobs)
	return s.attachTags(ctx, tx, jobs, index, ids, s.query)
}

// scanClaimed appends to out the rows sqlClaimDue returns, as they will be
// once sqlClaim leases them: jobs of Queue queue, Running under worker at
// their next Attempt, with their Lease expiring at expires (microseconds),
// each with its payload. out, if it has no capacity yet, gets room for
// want jobs (what the claim asked of the Queue) at the first row.
func scanClaimed(rows *sql.Rows, out []job.Job, want int, queue string, worker job.WorkerID, expires int64) ([]job.Job, error) {
	defer func() { _ = rows.Close() }()
	var wireName sql.RawBytes
	leaseExpires := fromMicros(expires)
	for rows.Next() {
		var (
			id, attempt, maxAttempts, scheduled, created, rc, cc, attemptBase, snoozes int64
			finalized                                                                  sql.NullInt64
			cancelRequested                                                            bool
			payload                                                                    []byte
			trace, progressNote                                                        sql.NullString
			progressAttempt, progressAt                                                sql.NullInt64
			progressFraction                                                           sql.NullFloat64
			cursorAttempt, cursorAt                                                    sql.NullInt64
			cursor                                                                     []byte
			key, terminal                                                              sql.NullString
		)
		if err := rows.Scan(&id, &wireName, &attempt, &maxAttempts, &scheduled, &created, &finalized,
			&rc, &cc, &cancelRequested, &attemptBase, &snoozes, &payload, &trace,
			&progressAttempt, &progressFraction, &progressNote, &progressAt,
			&cursorAttempt, &cursor, &cursorAt, &key, &terminal); err != nil {
			return nil, err
		}
		if cap(out) == 0 {
			out = make([]job.Job, 0, want)
		}
		j := job.Job{
			ID: job.ID(id), Queue: queue, State: job.StateRunning, Attempt: job.Attempt(attempt + 1),
			MaxAttempts: int(maxAttempts), ScheduledAt: fromMicros(scheduled), CreatedAt: fromMicros(created),
			Worker: worker, LeaseExpiresAt: leaseExpires, CancelRequested: cancelRequested,
			AttemptBase: job.Attempt(attemptBase), Snoozes: int(snoozes), Payload: payload, ConcurrencyKey: key.String,
		}
		// The Wire Name repeats from job to job: share the string.
		if n := len(out); n > 0 && out[n-1].WireName == string(wireName) {
			j.WireName = out[n-1].WireName
		} else {
			j.WireName = string(wireName)
		}
		if finalized.Valid {
			j.FinalizedAt = fromMicros(finalized.Int64)
		}
		var err error
		if j.TerminalCause, err = job.ParseTerminalCause(terminal.String); err != nil {
			return nil, fmt.Errorf("job %d: %w", id, err)
		}
		if j.TraceContext, err = traceOf(id, trace); err != nil {
			return nil, err
		}
		j.Progress = progressOf(progressAttempt, progressFraction, progressNote, progressAt)
		j.Cursor = cursorOf(cursorAttempt, cursor, cursorAt)
		if j.RetryCause, err = decode(retryCauseCodes, "retry cause", rc); err != nil {
			return nil, err
		}
		if j.CancelCause, err = decode(cancelCauseCodes, "cancel cause", cc); err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// claimRate is what a claim needs to count its leases against a Queue's
// Rate Limit: whether it has one, and the window (µs) they count in.
type claimRate struct {
	rated  bool
	window int64
}

// room returns how many jobs a claim at now may take from the Queue: want,
// or fewer if the Queue's Concurrency Limit leaves fewer slots or its Rate
// Limit leaves fewer starts in the window; 0 if the Queue is paused or
// unknown. It also returns the Queue's key settings. It runs inside the
// claim's write transaction.
func (s *Store) room(ctx context.Context, tx *sql.Tx, queue string, want int, now time.Time) (int, claimRate, keySettings, error) {
	var paused bool
	var limit int
	var r rateRow
	var k keySettings
	err := s.queryRow(ctx, tx, s.q.queueSettings, []any{queue}, &paused, &limit, &r.limit, &r.period, &r.window, &r.count,
		&k.limit, &k.rateLimit, &k.ratePeriod, &k.fair, &k.turn)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, claimRate{}, k, nil
	case err != nil:
		return 0, claimRate{}, k, fmt.Errorf("queue %q: settings: %w", queue, err)
	case paused:
		return 0, claimRate{}, k, nil
	}
	var rate claimRate
	if budget, window := r.budget(now); budget >= 0 {
		want, rate = min(want, budget), claimRate{rated: true, window: window}
	}
	if limit <= 0 || want <= 0 {
		return want, rate, k, nil
	}
	var running int
	if err := s.queryRow(ctx, tx, s.q.countRunning, []any{queue}, &running); err != nil {
		return 0, claimRate{}, k, fmt.Errorf("queue %q: count running: %w", queue, err)
	}
	return min(want, limit-running), rate, k, nil
}

// jobIDs encodes the ids of jobs as a JSON array for json_each(?).
func jobIDs(jobs []job.Job) string {
	b := make([]byte, 0, 2+8*len(jobs))
	b = append(b, '[')
	for i, j := range jobs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(j.ID), 10)
	}
	return string(append(b, ']'))
}
