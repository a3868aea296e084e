package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// LeaseRenew extends every Lease still held by p.Worker (the job Running
// under that worker at exactly that Attempt) to the store's now plus
// p.LeaseDuration, in one write transaction, and answers each Lease in input
// order: renewed, cancel requested, or lost. A Lease that lapsed but was not
// yet expired is still held and renews.
func (s *Store) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := make([]store.RenewResult, len(p.Leases))
	if len(p.Leases) == 0 {
		return out, s.ready(ctx)
	}
	err := s.write(ctx, "renew leases", func(tx *sql.Tx) error {
		expires := micros(s.clock.Now().Add(p.LeaseDuration))
		st, err := s.prepare(ctx, tx, s.q.renew)
		if err != nil {
			return err
		}
		defer st.close()
		for i, l := range p.Leases {
			out[i] = store.RenewResult{Lease: l, Status: store.RenewLost}
			var cancelRequested bool
			err := st[0].QueryRowContext(ctx, expires, int64(l.ID), string(p.Worker), int64(l.Attempt)).Scan(&cancelRequested)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return fmt.Errorf("lease %s: %w", l, err)
			case cancelRequested:
				out[i].Status = store.RenewCancelRequested
			default:
				out[i].Status = store.RenewRenewed
			}
		}
		at := micros(s.clock.Now())
		if err := s.setProgress(ctx, tx, p, out, at); err != nil {
			return err
		}
		return s.setRenewedCursors(ctx, tx, p, out, at)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LeaseExpire ends, in one write transaction, the lapsed Leases (expiry time
// at or before the store's now) of Running jobs in p.Queues, smallest job id
// first, at most p.Limit of them (0: all). Each job moves as
// core.AfterLeaseLoss says: Dead-Lettered at its attempt ceiling, otherwise
// Scheduled and due now; either way with the Retry Cause lease expired.
// Slots are freed. The expired Leases are returned in id order.
func (s *Store) LeaseExpire(ctx context.Context, p store.ExpireParams) (store.ExpireResult, error) {
	if err := p.Validate(); err != nil {
		return store.ExpireResult{}, err
	}
	if len(p.Queues) == 0 {
		return store.ExpireResult{}, s.ready(ctx)
	}
	var res store.ExpireResult
	var requeued []string
	err := s.write(ctx, "expire leases", func(tx *sql.Tx) error {
		res, requeued = store.ExpireResult{}, nil
		now := s.clock.Now()
		limit := int64(p.Limit)
		if limit == 0 {
			limit = -1
		}
		rows, err := s.query(ctx, tx, s.q.lapsed, jsonArray(p.Queues), micros(now), limit)
		if err != nil {
			return err
		}
		type lapsed struct {
			lease   job.Lease
			queue   string
			ceiling int
			cancel  bool
		}
		var found []lapsed
		for rows.Next() {
			var l lapsed
			var id, attempt int64
			if err := rows.Scan(&id, &l.queue, &attempt, &l.ceiling, &l.cancel); err != nil {
				_ = rows.Close()
				return err
			}
			l.lease = job.Lease{ID: job.ID(id), Attempt: job.Attempt(attempt)}
			found = append(found, l)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		if len(found) == 0 {
			return nil
		}
		st, err := s.prepare(ctx, tx, s.q.endLease, s.q.transition)
		if err != nil {
			return err
		}
		defer st.close()
		var terminal []int64
		for _, l := range found {
			to, err := s.endLease(ctx, tx, st, l.lease, l.ceiling, l.cancel, core.ViaExpire, now)
			if err != nil {
				return err
			}
			res.Expired = append(res.Expired, l.lease)
			if to == job.StateScheduled && !slices.Contains(requeued, l.queue) {
				requeued = append(requeued, l.queue)
			}
			if to.Terminal() {
				terminal = append(terminal, int64(l.lease.ID))
			}
		}
		released, err := s.settle(ctx, tx, terminal, now)
		requeued = mergeQueues(requeued, released)
		return err
	})
	if err != nil {
		return store.ExpireResult{}, err
	}
	slices.Sort(requeued)
	s.hints.Announce(requeued)
	return res, nil
}

// LeaseRelinquish hands back, in one write transaction, each Lease p.Worker
// still holds, in input order: the job returns to Scheduled due now with its
// Attempt as charged and its Retry Cause untouched, or dead-letters if that
// Attempt was its last (core.AfterLeaseLoss). Slots are freed; stale Leases
// are skipped.
func (s *Store) LeaseRelinquish(ctx context.Context, p store.RelinquishParams) (store.RelinquishResult, error) {
	if err := p.Validate(); err != nil {
		return store.RelinquishResult{}, err
	}
	if len(p.Leases) == 0 {
		return store.RelinquishResult{}, s.ready(ctx)
	}
	var res store.RelinquishResult
	var requeued []string
	err := s.write(ctx, "relinquish leases", func(tx *sql.Tx) error {
		res, requeued = store.RelinquishResult{}, nil
		now := s.clock.Now()
		st, err := s.prepare(ctx, tx, s.q.endLease, s.q.transition, s.q.held)
		if err != nil {
			return err
		}
		defer st.close()
		var terminal []int64
		for _, l := range p.Leases {
			var queue string
			var ceiling int
			var cancel bool
			err := st[2].QueryRowContext(ctx, int64(l.ID), string(p.Worker), int64(l.Attempt)).Scan(&queue, &ceiling, &cancel)
			if errors.Is(err, sql.ErrNoRows) {
				continue // stale
			}
			if err != nil {
				return fmt.Errorf("lease %s: %w", l, err)
			}
			to, err := s.endLease(ctx, tx, st, l, ceiling, cancel, core.ViaRelinquish, now)
			if err != nil {
				return err
			}
			res.Relinquished = append(res.Relinquished, l)
			if to == job.StateScheduled && !slices.Contains(requeued, queue) {
				requeued = append(requeued, queue)
			}
			if to.Terminal() {
				terminal = append(terminal, int64(l.ID))
			}
		}
		released, err := s.settle(ctx, tx, terminal, now)
		requeued = mergeQueues(requeued, released)
		return err
	})
	if err != nil {
		return store.RelinquishResult{}, err
	}
	slices.Sort(requeued)
	s.hints.Announce(requeued)
	return res, nil
}

// endLease ends a Running job's Lease without an outcome, by expiry or
// Relinquish, as core.LeaseLoss decides — Cancelled if its cancel was
// requested, else as core.AfterLeaseLoss says against its ceiling — and
// records the transition. st holds the endLease and transition statements.
// The caller read the job's Attempt, ceiling and cancel request in the same
// transaction.
func (s *Store) endLease(ctx context.Context, tx *sql.Tx, st stmts, l job.Lease, ceiling int, cancelRequested bool, via core.Via, now time.Time) (job.State, error) {
	to, via := core.LeaseLoss(l.Attempt, ceiling, via, cancelRequested)
	var scheduledAt, finalizedAt, cancelCause any
	if to == job.StateScheduled {
		scheduledAt = micros(now)
	}
	if to.Terminal() {
		finalizedAt = micros(now)
	}
	if to == job.StateCancelled {
		cancelCause = encode(cancelCauseCodes, job.CancelCauseOperator)
	}
	cause := core.TerminalCauseAfter(core.Edge{From: job.StateRunning, To: to, Via: via}, 0)
	if _, err := st[0].ExecContext(ctx, stateCode(to), scheduledAt, retryCauseArg(to, via), finalizedAt, int64(l.ID), int64(l.Attempt), cancelCause,
		nullString(cause.String())); err != nil {
		return to, fmt.Errorf("lease %s: %w", l, err)
	}
	if err := s.logEntry(ctx, tx, st[1], int64(l.ID), micros(now), codeRunning, stateCode(to), viaCode(via), l.Attempt, ""); err != nil {
		return to, fmt.Errorf("lease %s: %w", l, err)
	}
	return to, nil
}
