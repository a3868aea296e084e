package mariadb

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobRequeue brings a finished job back to Scheduled, due now, with a
// fresh attempt budget (store.Operator).
func (s *Store) JobRequeue(ctx context.Context, p store.JobRequeueParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	return s.operate(ctx, "requeue", p.ID, func(w *wtx, r *jrow) error {
		if !core.Requeueable(r.job.State) {
			return fmt.Errorf("requeue job %d: it is %s: %w", p.ID, r.job.State, store.ErrIllegalTransition)
		}
		r.job.AttemptBase = r.job.Attempt
		r.job.ScheduledAt = w.now
		r.job.FinalizedAt = time.Time{}
		r.job.CancelCause = job.CancelCauseNone
		r.job.CancelRequested = false
		if err := w.move(r, job.StateScheduled, core.ViaRequeue, ""); err != nil {
			return err
		}
		return w.record(p.Actor, store.AuditRequeue, r.job.ID, r.job.Queue, "")
	})
}

// JobCancel cancels a job at once, or records a cancel request for a
// Running one (store.Operator).
func (s *Store) JobCancel(ctx context.Context, p store.JobCancelParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	return s.operate(ctx, "cancel", p.ID, func(w *wtx, r *jrow) error {
		switch core.OperatorCancel(r.job.State) {
		case core.CancelAtOnce:
			r.job.CancelCause = job.CancelCauseOperator
			if err := w.move(r, job.StateCancelled, core.ViaCancel, ""); err != nil {
				return err
			}
			return w.record(p.Actor, store.AuditCancel, r.job.ID, r.job.Queue, "")
		case core.CancelRequest:
			r.job.CancelRequested = true
			if err := w.save(r); err != nil {
				return err
			}
			return w.record(p.Actor, store.AuditCancelRequest, r.job.ID, r.job.Queue, "")
		default:
			return fmt.Errorf("cancel job %d: it is %s: %w", p.ID, r.job.State, store.ErrIllegalTransition)
		}
	})
}

// JobReschedule moves a waiting job's due time (store.Operator).
func (s *Store) JobReschedule(ctx context.Context, p store.JobRescheduleParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	return s.operate(ctx, "reschedule", p.ID, func(w *wtx, r *jrow) error { return w.reschedule(p, r, true) })
}

// JobRescheduleInTx is JobReschedule inside tx, a *sql.Tx the application
// began on the store's database (store.TxInserter), taken and checked as
// for JobInsertManyInTx. It holds the writer row until tx ends and sends
// no Wake-Up Hint.
func (s *Store) JobRescheduleInTx(ctx context.Context, tx any, p store.JobRescheduleParams) (job.Job, error) {
	var out job.Job
	err := s.inTx(ctx, tx, "reschedule in transaction", p.Validate, func(w *wtx) error {
		var err error
		out, err = w.act(p.ID, func(w *wtx, r *jrow) error { return w.reschedule(p, r, false) })
		return err
	})
	return out, err
}

// reschedule moves r's due time and records the action; hint: announce the
// job when it is claimable now (never inside the caller's transaction).
func (w *wtx) reschedule(p store.JobRescheduleParams, r *jrow, hint bool) error {
	if !core.Reschedulable(r.job.State) {
		return fmt.Errorf("reschedule job %d: it is %s: %w", p.ID, r.job.State, store.ErrIllegalTransition)
	}
	at := p.DueAt(w.now)
	r.job.ScheduledAt = at.UTC().Truncate(time.Microsecond)
	if err := w.save(r); err != nil {
		return err
	}
	if hint && core.Claimable(&r.job, w.now) {
		w.hint(r.job.Queue)
	}
	return w.record(p.Actor, store.AuditReschedule, r.job.ID, r.job.Queue, store.RescheduleDetail(at))
}

// operate runs one Operator Action on job id and returns the job after it.
func (s *Store) operate(ctx context.Context, what string, id job.ID, fn func(w *wtx, r *jrow) error) (job.Job, error) {
	var out job.Job
	err := s.write(ctx, what, func(w *wtx) error {
		var err error
		out, err = w.act(id, fn)
		return err
	})
	return out, err
}

// act runs one Operator Action on job id inside w and returns the job
// after it, with its Tags.
func (w *wtx) act(id job.ID, fn func(w *wtx, r *jrow) error) (job.Job, error) {
	r, err := w.find(id)
	if err != nil {
		return job.Job{}, err
	}
	if err := fn(w, r); err != nil {
		return job.Job{}, err
	}
	jobs := []job.Job{r.job}
	if err := loadTags(w.tx, w.ctx, jobs); err != nil {
		return job.Job{}, err
	}
	return jobs[0], nil
}
