package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobRequeue moves a Dead-Lettered or Quarantined job back to Scheduled,
// due at the store's now, in one write transaction with its Transition Log
// entry and audit record. The Retry Cause is cleared and the attempt budget
// starts over above the kept Attempt (AttemptBase). Any other state fails
// with store.ErrIllegalTransition, an unknown job with store.ErrNotFound.
func (s *Store) JobRequeue(ctx context.Context, p store.JobRequeueParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	var out job.Job
	err := s.write(ctx, "requeue job", func(tx *sql.Tx) error {
		h, err := s.head(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if !core.Requeueable(h.state) {
			return fmt.Errorf("job %d is %s: %w", p.ID, h.state, store.ErrIllegalTransition)
		}
		now := s.clock.Now()
		if _, err := tx.ExecContext(ctx, s.m.requeue, micros(now), int64(p.ID)); err != nil {
			return err
		}
		if err := s.logOne(ctx, tx, int64(p.ID), now, h.state, job.StateScheduled, core.ViaRequeue, h.attempt); err != nil {
			return err
		}
		if err := s.audit(ctx, tx, now, p.Actor, store.AuditRequeue, p.ID, h.queue, ""); err != nil {
			return err
		}
		out, err = s.getIn(ctx, tx, p.ID)
		return err
	})
	if err != nil {
		return job.Job{}, err
	}
	s.hints.Announce([]string{out.Queue})
	return out, nil
}

// JobCancel is the operator cancel, in one write transaction with its audit
// record. A Scheduled or Awaiting-Parent job becomes Cancelled at once, with
// cancel cause operator. A Running job keeps running with CancelRequested
// set: its worker learns of it at the next LeaseRenew
// (store.RenewCancelRequested), and however the Attempt ends the job ends
// Cancelled. Asking again is harmless. A terminal job fails with
// store.ErrIllegalTransition, an unknown one with store.ErrNotFound.
func (s *Store) JobCancel(ctx context.Context, p store.JobCancelParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	var out job.Job
	var released []string
	err := s.write(ctx, "cancel job", func(tx *sql.Tx) error {
		released = nil
		h, err := s.head(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		switch core.OperatorCancel(h.state) {
		case core.CancelAtOnce:
			if _, err := tx.ExecContext(ctx, s.q.cancelNow, stateCode(job.StateCancelled),
				encode(cancelCauseCodes, job.CancelCauseOperator), micros(now), int64(p.ID)); err != nil {
				return err
			}
			if err := s.logOne(ctx, tx, int64(p.ID), now, h.state, job.StateCancelled, core.ViaCancel, h.attempt); err != nil {
				return err
			}
			if err := s.audit(ctx, tx, now, p.Actor, store.AuditCancel, p.ID, h.queue, ""); err != nil {
				return err
			}
			released, err = s.settle(ctx, tx, []int64{int64(p.ID)}, now)
		case core.CancelRequest:
			if _, err := tx.ExecContext(ctx, s.q.requestCancel, int64(p.ID)); err != nil {
				return err
			}
			err = s.audit(ctx, tx, now, p.Actor, store.AuditCancelRequest, p.ID, h.queue, "")
		case core.CancelRefused:
			return fmt.Errorf("job %d is %s: %w", p.ID, h.state, store.ErrIllegalTransition)
		}
		if err != nil {
			return err
		}
		out, err = s.getIn(ctx, tx, p.ID)
		return err
	})
	if err != nil {
		return job.Job{}, err
	}
	s.hints.Announce(released) // dependents the cancel released
	return out, nil
}

// RequestCancel is JobCancel by store.ActorSystem.
func (s *Store) RequestCancel(ctx context.Context, id job.ID) error {
	_, err := s.JobCancel(ctx, store.JobCancelParams{ID: id})
	return err
}

// JobReschedule moves the due time of a Scheduled or Awaiting-Parent job to
// p.ScheduledAt in one write transaction with its audit record; no
// Transition Log entry is written. A Running or terminal job fails with
// store.ErrIllegalTransition.
func (s *Store) JobReschedule(ctx context.Context, p store.JobRescheduleParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	var out job.Job
	err := s.write(ctx, "reschedule job", func(tx *sql.Tx) error {
		var err error
		out, err = s.reschedule(ctx, tx, p)
		return err
	})
	if err != nil {
		return job.Job{}, err
	}
	if core.Claimable(&out, s.clock.Now()) {
		s.hints.Announce([]string{out.Queue})
	}
	return out, nil
}

// JobRescheduleTx is JobReschedule inside tx, a write transaction the
// caller owns on the same database file (glossary, Reschedule: "It can
// join the caller's transaction, the same as Transactional Enqueue"). The
// store never commits or rolls back tx; no Wake-Up Hint is sent.
func (s *Store) JobRescheduleTx(ctx context.Context, tx *sql.Tx, p store.JobRescheduleParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	if err := s.ready(ctx); err != nil {
		return job.Job{}, err
	}
	if tx == nil {
		return job.Job{}, fmt.Errorf("sqlite: reschedule job: %w: nil transaction", store.ErrInvalidParams)
	}
	out, err := s.reschedule(ctx, tx, p)
	if err != nil {
		return job.Job{}, fmt.Errorf("sqlite: reschedule job in the caller's transaction: %w", err)
	}
	return out, nil
}

func (s *Store) reschedule(ctx context.Context, tx *sql.Tx, p store.JobRescheduleParams) (job.Job, error) {
	h, err := s.head(ctx, tx, p.ID)
	if err != nil {
		return job.Job{}, err
	}
	if !core.Reschedulable(h.state) {
		return job.Job{}, fmt.Errorf("job %d is %s: %w", p.ID, h.state, store.ErrIllegalTransition)
	}
	now := s.clock.Now()
	at := p.DueAt(now)
	if _, err := tx.ExecContext(ctx, s.m.reschedule, micros(at), int64(p.ID)); err != nil {
		return job.Job{}, err
	}
	if err := s.audit(ctx, tx, now, p.Actor, store.AuditReschedule, p.ID, h.queue, store.RescheduleDetail(at)); err != nil {
		return job.Job{}, err
	}
	return s.getIn(ctx, tx, p.ID)
}

// jobHead is what an Operator Action reads of a job before it acts.
type jobHead struct {
	state   job.State
	attempt job.Attempt
	queue   string
}

// head reads the job's state, Attempt and Queue, or fails with
// store.ErrNotFound.
func (s *Store) head(ctx context.Context, tx *sql.Tx, id job.ID) (jobHead, error) {
	var h jobHead
	var code, attempt int64
	err := tx.QueryRowContext(ctx, s.m.jobHead, int64(id)).Scan(&code, &attempt, &h.queue)
	if errors.Is(err, sql.ErrNoRows) {
		return h, fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return h, err
	}
	h.attempt = job.Attempt(attempt)
	h.state, err = decode(stateCodes, "state", code)
	return h, err
}

// getIn reads one job inside tx.
func (s *Store) getIn(ctx context.Context, tx *sql.Tx, id job.ID) (job.Job, error) {
	jobs, err := s.scanJobs(ctx, tx, s.q.jobGet, int64(id))
	if err != nil {
		return job.Job{}, err
	}
	if len(jobs) == 0 {
		return job.Job{}, fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	return jobs[0], nil
}

// audit writes one audit record.
func (s *Store) audit(ctx context.Context, tx *sql.Tx, at time.Time, a store.Actor, action store.AuditAction, id job.ID, queue, detail string) error {
	var jobID any
	if id != 0 {
		jobID = int64(id)
	}
	if _, err := tx.ExecContext(ctx, s.m.audit, micros(at), string(a.OrSystem()), action.String(), jobID, queue, detail); err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}
