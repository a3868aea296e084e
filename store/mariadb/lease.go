package mariadb

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// LeaseRenew extends each named Lease still held by p.Worker and records
// the progress reported with it (store.Worker).
func (s *Store) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.RenewResult
	err := s.write(ctx, "renew", func(w *wtx) error {
		out = make([]store.RenewResult, len(p.Leases))
		for i, l := range p.Leases {
			out[i] = store.RenewResult{Lease: l, Status: store.RenewLost}
			r, err := w.held(p.Worker, l)
			if err != nil {
				return err
			}
			if r == nil {
				continue
			}
			r.job.LeaseExpiresAt = w.now.Add(p.LeaseDuration)
			if k := slices.IndexFunc(p.Progress, func(pr store.ProgressReport) bool { return pr.Lease == l }); k >= 0 {
				pr := p.Progress[k]
				r.job.Progress = &job.Progress{Attempt: l.Attempt, Fraction: pr.Fraction, Note: pr.Note, At: w.now}
			}
			if err := w.save(r); err != nil {
				return err
			}
			if err := w.setRenewedCursor(l, p.Cursors); err != nil {
				return err
			}
			out[i].Status = store.RenewRenewed
			if r.job.CancelRequested {
				out[i].Status = store.RenewCancelRequested
			}
		}
		return nil
	})
	return out, err
}

// LeaseExpire ends the lapsed Leases of the named Queues, at most p.Limit
// of them, in id order (store.Worker).
func (s *Store) LeaseExpire(ctx context.Context, p store.ExpireParams) (store.ExpireResult, error) {
	if err := p.Validate(); err != nil {
		return store.ExpireResult{}, err
	}
	if err := s.ready(ctx); err != nil {
		return store.ExpireResult{}, err
	}
	lapsed, err := s.anyRow(ctx, p.Queues, nil, `state = 3 AND lease_expires_at <= {now}`)
	if err != nil {
		return store.ExpireResult{}, s.fail("expire", err)
	}
	if !lapsed {
		return store.ExpireResult{}, nil
	}
	var res store.ExpireResult
	err = s.write(ctx, "expire", func(w *wtx) error {
		res = store.ExpireResult{}
		if len(p.Queues) == 0 {
			return nil
		}
		var b strings.Builder
		args := []any{micros(w.now)}
		b.WriteString(`SELECT id FROM backwave_job WHERE state = 3 AND lease_expires_at <= ? AND queue IN (`)
		for i, q := range p.Queues {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('?')
			args = append(args, q)
		}
		b.WriteString(`) ORDER BY id`)
		if p.Limit > 0 {
			b.WriteString(` LIMIT ?`)
			args = append(args, p.Limit)
		}
		ids, err := w.ids(b.String(), args...)
		if err != nil {
			return fmt.Errorf("read lapsed leases: %w", err)
		}
		for _, id := range ids {
			r, err := w.load(job.ID(id))
			if err != nil {
				return err
			}
			res.Expired = append(res.Expired, r.job.Lease())
			if err := w.endLease(r, core.ViaExpire); err != nil {
				return err
			}
		}
		return nil
	})
	return res, err
}

// LeaseRelinquish hands live Leases back (store.Worker).
func (s *Store) LeaseRelinquish(ctx context.Context, p store.RelinquishParams) (store.RelinquishResult, error) {
	if err := p.Validate(); err != nil {
		return store.RelinquishResult{}, err
	}
	var res store.RelinquishResult
	err := s.write(ctx, "relinquish", func(w *wtx) error {
		res = store.RelinquishResult{}
		for _, l := range p.Leases {
			r, err := w.held(p.Worker, l)
			if err != nil {
				return err
			}
			if r == nil {
				continue
			}
			if err := w.endLease(r, core.ViaRelinquish); err != nil {
				return err
			}
			res.Relinquished = append(res.Relinquished, l)
		}
		return nil
	})
	return res, err
}

// endLease ends r's Lease as core.LeaseLoss says.
func (w *wtx) endLease(r *jrow, via core.Via) error {
	to, via := core.LeaseLoss(r.job.Attempt, r.job.Ceiling(), via, r.job.CancelRequested)
	switch to {
	case job.StateScheduled:
		r.job.ScheduledAt = w.now
	case job.StateCancelled:
		r.job.CancelCause = job.CancelCauseOperator
	}
	return w.move(r, to, via, "")
}

// ids runs a query of one id column.
func (w *wtx) ids(q string, args ...any) ([]int64, error) {
	rows, err := w.query(q, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// OutcomeReport applies a batch of Attempt outcomes, each behind its own
// fence (store.Worker).
func (s *Store) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.ReportResult
	err := s.write(ctx, "report", func(w *wtx) error {
		out = make([]store.ReportResult, len(p.Outcomes))
		for i, o := range p.Outcomes {
			out[i] = store.ReportResult{Lease: o.Lease}
			r, err := w.held(p.Worker, o.Lease)
			if err != nil {
				return err
			}
			if r == nil {
				continue
			}
			if o.Cursor != nil {
				if err := w.setCursor(o.Lease, o.Cursor); err != nil {
					return err
				}
			}
			applied := core.UnderCancel(o.Outcome, r.job.CancelRequested)
			switch applied.State {
			case job.StateScheduled:
				r.job.ScheduledAt = w.now.Add(applied.RetryDelay)
				if applied.Via == core.ViaSnooze {
					// The snoozed Attempt is not charged: the base moves up.
					r.job.Snoozes++
					r.job.AttemptBase++
				}
			case job.StateCancelled:
				r.job.CancelCause = job.CancelCauseOperator
			case job.StateSucceeded:
				if o.Output != nil {
					out := o.Output
					if len(out) == 0 {
						out = []byte{}
					}
					if _, err := w.exec(`UPDATE backwave_job SET output = ? WHERE id = ?`, out, int64(r.job.ID)); err != nil {
						return fmt.Errorf("job %d: output: %w", r.job.ID, err)
					}
				}
			}
			if err := w.addTags(r.job.ID, o.TagDelta); err != nil {
				return err
			}
			e := core.Edge{From: r.job.State, To: applied.State, Via: applied.Via}
			if err := w.moveCaused(r, e, applied.TerminalCause, o.FailureDetail); err != nil {
				return err
			}
			out[i].Applied = true
		}
		return nil
	})
	return out, err
}
