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
		ids := leaseIDs(p.Leases)
		if !distinct(ids) {
			return w.renewEach(p, out)
		}
		rows, err := w.loadMany(ids)
		if err != nil {
			return err
		}
		var renewed []*jrow
		for i, l := range p.Leases {
			out[i] = store.RenewResult{Lease: l, Status: store.RenewLost}
			r := rows[int64(l.ID)]
			if !holds(r, p.Worker, l) {
				continue
			}
			w.renew(r, p)
			renewed = append(renewed, r)
			if err := w.setRenewedCursor(l, p.Cursors); err != nil {
				return err
			}
			out[i].Status = renewStatus(r)
		}
		return w.saveMany(renewed)
	})
	return out, err
}

// renewEach is LeaseRenew one Lease at a time, for a renewal that names a
// job twice: the second sees the first's write.
func (w *wtx) renewEach(p store.RenewParams, out []store.RenewResult) error {
	for i, l := range p.Leases {
		out[i] = store.RenewResult{Lease: l, Status: store.RenewLost}
		r, err := w.held(p.Worker, l)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		w.renew(r, p)
		if err := w.save(r); err != nil {
			return err
		}
		if err := w.setRenewedCursor(l, p.Cursors); err != nil {
			return err
		}
		out[i].Status = renewStatus(r)
	}
	return nil
}

// renew extends r's Lease and records the progress p reports for it.
func (w *wtx) renew(r *jrow, p store.RenewParams) {
	l := r.job.Lease()
	r.job.LeaseExpiresAt = w.now.Add(p.LeaseDuration)
	if k := slices.IndexFunc(p.Progress, func(pr store.ProgressReport) bool { return pr.Lease == l }); k >= 0 {
		pr := p.Progress[k]
		r.job.Progress = &job.Progress{Attempt: l.Attempt, Fraction: pr.Fraction, Note: pr.Note, At: w.now}
	}
}

// renewStatus is a renewed job's answer.
func renewStatus(r *jrow) store.RenewStatus {
	if r.job.CancelRequested {
		return store.RenewCancelRequested
	}
	return store.RenewRenewed
}

// leaseIDs are the jobs the Leases name, in order.
func leaseIDs(leases []job.Lease) []int64 {
	ids := make([]int64, len(leases))
	for i, l := range leases {
		ids[i] = int64(l.ID)
	}
	return ids
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
		rows, err := w.loadOrdered(ids)
		if err != nil {
			return err
		}
		for _, r := range rows {
			res.Expired = append(res.Expired, r.job.Lease())
		}
		return w.endLeases(rows, core.ViaExpire)
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
		ids := leaseIDs(p.Leases)
		if !distinct(ids) {
			// A job named twice: the second sees the first's write.
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
		}
		read, err := w.loadMany(ids)
		if err != nil {
			return err
		}
		var rows []*jrow
		for _, l := range p.Leases {
			if r := read[int64(l.ID)]; holds(r, p.Worker, l) {
				rows = append(rows, r)
				res.Relinquished = append(res.Relinquished, l)
			}
		}
		return w.endLeases(rows, core.ViaRelinquish)
	})
	return res, err
}

// endLease ends r's Lease as core.LeaseLoss says.
func (w *wtx) endLease(r *jrow, via core.Via) error { return w.endLeaseIn(nil, r, via) }

// endLeaseIn is endLease with the move staged in b, unless b is nil.
func (w *wtx) endLeaseIn(b *batch, r *jrow, via core.Via) error {
	to, via := core.LeaseLoss(r.job.Attempt, r.job.Ceiling(), via, r.job.CancelRequested)
	switch to {
	case job.StateScheduled:
		r.job.ScheduledAt = w.now
	case job.StateCancelled:
		r.job.CancelCause = job.CancelCauseOperator
	}
	if b == nil {
		return w.move(r, to, via, "")
	}
	e := core.Edge{From: r.job.State, To: to, Via: via}
	return w.stage(b, r, e, core.TerminalCauseAfter(e, 0), "")
}

// endLeases ends the Leases of rows, distinct Running jobs, in order, in
// sets (batch.go): a job with dependents still to count goes on its own
// after the batch so far is written, as in OutcomeReport, and the rows
// after it are read again.
func (w *wtx) endLeases(rows []*jrow, via core.Via) error {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = int64(r.job.ID)
	}
	deps, err := w.withDependents(ids)
	if err != nil {
		return err
	}
	var b batch
	for i, r := range rows {
		if !deps[ids[i]] {
			if err := w.endLeaseIn(&b, r, via); err != nil {
				return err
			}
			continue
		}
		if err := w.flush(&b); err != nil {
			return err
		}
		if err := w.endLease(r, via); err != nil {
			return err
		}
		later, err := w.loadOrdered(ids[i+1:])
		if err != nil {
			return err
		}
		copy(rows[i+1:], later)
	}
	return w.flush(&b)
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
		ids := make([]int64, len(p.Outcomes))
		for i, o := range p.Outcomes {
			ids[i] = int64(o.Lease.ID)
		}
		if !distinct(ids) {
			// A job named twice: the second outcome sees the first's write.
			for i := range p.Outcomes {
				if err := w.reportOne(p, i, out, nil, nil); err != nil {
					return err
				}
			}
			return nil
		}
		rows, err := w.loadMany(ids)
		if err != nil {
			return err
		}
		deps, err := w.withDependents(ids)
		if err != nil {
			return err
		}
		var b batch
		for i := range p.Outcomes {
			if r := rows[ids[i]]; r != nil && deps[ids[i]] && holds(r, p.Worker, p.Outcomes[i].Lease) {
				// The end of a job with dependents settles them, reading
				// and writing their rows: the batch so far is written
				// first, so settle reads it, the job goes on its own, and
				// the rows still to report are read again. (settle moves
				// only Awaiting Parent dependents, never a Running job of
				// this report, and writes none of the columns an outcome
				// changes; the second read keeps every staged row as new
				// as what settle wrote.)
				if err := w.flush(&b); err != nil {
					return err
				}
				if err := w.reportOne(p, i, out, nil, nil); err != nil {
					return err
				}
				if rows, err = w.loadMany(ids[i+1:]); err != nil {
					return err
				}
				continue
			}
			if err := w.reportOne(p, i, out, rows[ids[i]], &b); err != nil {
				return err
			}
		}
		return w.flush(&b)
	})
	return out, err
}

// reportOne applies outcome i of p, answering in out[i]. With b nil it
// reads the job and moves it on its own; otherwise r is the job as read
// (nil if there is none) and its move is staged in b, for a job with no
// uncounted dependents.
func (w *wtx) reportOne(p store.ReportParams, i int, out []store.ReportResult, r *jrow, b *batch) error {
	o := p.Outcomes[i]
	out[i] = store.ReportResult{Lease: o.Lease}
	if b == nil {
		var err error
		if r, err = w.held(p.Worker, o.Lease); err != nil {
			return err
		}
	} else if !holds(r, p.Worker, o.Lease) {
		r = nil
	}
	if r == nil {
		return nil
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
			output := o.Output
			if len(output) == 0 {
				output = []byte{}
			}
			if b != nil {
				b.outputs = append(b.outputs, jobOutput{int64(r.job.ID), output})
			} else if _, err := w.exec(`UPDATE backwave_job SET output = ? WHERE id = ?`, output, int64(r.job.ID)); err != nil {
				return fmt.Errorf("job %d: output: %w", r.job.ID, err)
			}
		}
	}
	if b != nil {
		for _, t := range job.NormalizeTags(o.TagDelta) {
			b.tags = append(b.tags, jobTag{int64(r.job.ID), t})
		}
	} else if err := w.addTags(r.job.ID, o.TagDelta); err != nil {
		return err
	}
	e := core.Edge{From: r.job.State, To: applied.State, Via: applied.Via}
	if b == nil {
		if err := w.moveCaused(r, e, applied.TerminalCause, o.FailureDetail); err != nil {
			return err
		}
	} else if err := w.stage(b, r, e, applied.TerminalCause, o.FailureDetail); err != nil {
		return err
	}
	out[i].Applied = true
	return nil
}
