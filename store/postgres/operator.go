package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// headSQL reads and locks the row an Operator Action acts on.
const headSQL = `SELECT j.state, j.attempt, j.queue, coalesce($2::timestamptz, now())
FROM backwave.job j WHERE j.id = $1 FOR UPDATE`

// jobHead is what an Operator Action reads of a job before it acts, with
// the store's now.
type jobHead struct {
	state   job.State
	attempt job.Attempt
	queue   string
	now     sql.NullTime
}

// head locks the job's row and reads it, or fails with store.ErrNotFound.
func (s *Store) head(ctx context.Context, q querier, id job.ID) (jobHead, error) {
	var h jobHead
	var state string
	found := false
	err := q.query(ctx, s.sql(headSQL), []any{int64(id), s.nowArg()}, func(scan scanFunc) error {
		found = true
		return scan(&state, &h.attempt, &h.queue, &h.now)
	})
	if err != nil {
		return h, err
	}
	if !found {
		return h, fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	h.state, err = job.ParseState(state)
	return h, err
}

// auditSQL writes one audit record at the store's now.
const auditSQL = `INSERT INTO backwave.audit (at, actor, action, job_id, queue, detail)
VALUES (coalesce($1::timestamptz, now()), $2, $3, $4, $5, $6)`

func (s *Store) audit(ctx context.Context, q querier, a store.Actor, action store.AuditAction, id job.ID, queue, detail string) error {
	var jobID any
	if id != 0 {
		jobID = int64(id)
	}
	if _, err := q.exec(ctx, s.sql(auditSQL), s.nowArg(), pgText(string(a.OrSystem())), action.String(), jobID, queue, pgText(detail)); err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

// JobRequeue moves a Dead-Lettered or Quarantined job back to Scheduled,
// due at the store's now, in one transaction with its Transition Log entry
// and audit record. The Retry Cause is cleared and the attempt budget starts
// over above the kept Attempt (attempt_base). Any other state fails with
// store.ErrIllegalTransition, an unknown job with store.ErrNotFound.
func (s *Store) JobRequeue(ctx context.Context, p store.JobRequeueParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	if err := s.enter(ctx); err != nil {
		return job.Job{}, err
	}
	var out job.Job
	err := s.db.inTx(ctx, func(q querier) error {
		h, err := s.head(ctx, q, p.ID)
		if err != nil {
			return err
		}
		if !core.Requeueable(h.state) {
			return fmt.Errorf("job %d is %s: %w", p.ID, h.state, store.ErrIllegalTransition)
		}
		if _, err := q.exec(ctx, s.sql(`UPDATE backwave.job SET state = 'scheduled', attempt_base = attempt,
    scheduled_at = $2, finalized_at = NULL, retry_cause = '', cancel_cause = '', cancel_requested = false,
    terminal_cause = NULL
WHERE id = $1`), int64(p.ID), h.now.Time); err != nil {
			return err
		}
		if err := s.logOne(ctx, q, p.ID, h, job.StateScheduled, core.ViaRequeue); err != nil {
			return err
		}
		if err := s.audit(ctx, q, p.Actor, store.AuditRequeue, p.ID, h.queue, ""); err != nil {
			return err
		}
		if err := s.hint(ctx, q, h.queue); err != nil {
			return err
		}
		out, err = s.jobIn(ctx, q, p.ID)
		return err
	})
	if err != nil {
		return job.Job{}, s.wrap(fmt.Sprintf("requeue job %d", p.ID), err)
	}
	return out, nil
}

// JobCancel is the operator cancel, in one transaction with its audit
// record. A Scheduled or Awaiting-Parent job becomes Cancelled at once,
// with cancel cause operator. A Running job keeps running with
// CancelRequested set: its worker learns of it at the next LeaseRenew
// (store.RenewCancelRequested), and however the Attempt ends the job ends
// Cancelled. Asking again is harmless. A terminal job fails with
// store.ErrIllegalTransition, an unknown one with store.ErrNotFound.
func (s *Store) JobCancel(ctx context.Context, p store.JobCancelParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	if err := s.enter(ctx); err != nil {
		return job.Job{}, err
	}
	var out job.Job
	err := s.db.inTx(ctx, func(q querier) error {
		h, err := s.head(ctx, q, p.ID)
		if err != nil {
			return err
		}
		switch core.OperatorCancel(h.state) {
		case core.CancelAtOnce:
			if _, err := q.exec(ctx, s.sql(`UPDATE backwave.job SET state = 'cancelled', cancel_cause = 'operator', finalized_at = $2
WHERE id = $1`), int64(p.ID), h.now.Time); err != nil {
				return err
			}
			if err := s.logOne(ctx, q, p.ID, h, job.StateCancelled, core.ViaCancel); err != nil {
				return err
			}
			if err := s.audit(ctx, q, p.Actor, store.AuditCancel, p.ID, h.queue, ""); err != nil {
				return err
			}
			err = s.settle(ctx, q, []int64{int64(p.ID)}) // its dependents' latches
		case core.CancelRequest:
			if _, err := q.exec(ctx, s.sql(`UPDATE backwave.job SET cancel_requested = true WHERE id = $1`), int64(p.ID)); err != nil {
				return err
			}
			err = s.audit(ctx, q, p.Actor, store.AuditCancelRequest, p.ID, h.queue, "")
		case core.CancelRefused:
			return fmt.Errorf("job %d is %s: %w", p.ID, h.state, store.ErrIllegalTransition)
		}
		if err != nil {
			return err
		}
		out, err = s.jobIn(ctx, q, p.ID)
		return err
	})
	if err != nil {
		return job.Job{}, s.wrap(fmt.Sprintf("cancel job %d", p.ID), err)
	}
	return out, nil
}

// RequestCancel is JobCancel by store.ActorSystem.
func (s *Store) RequestCancel(ctx context.Context, id job.ID) error {
	_, err := s.JobCancel(ctx, store.JobCancelParams{ID: id})
	return err
}

// JobReschedule moves the due time of a Scheduled or Awaiting-Parent job to
// p.ScheduledAt in one transaction with its audit record; no Transition Log
// entry is written. A Running or terminal job fails with
// store.ErrIllegalTransition.
func (s *Store) JobReschedule(ctx context.Context, p store.JobRescheduleParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	if err := s.enter(ctx); err != nil {
		return job.Job{}, err
	}
	var out job.Job
	err := s.db.inTx(ctx, func(q querier) error {
		var err error
		out, err = s.reschedule(ctx, q, p)
		return err
	})
	if err != nil {
		return job.Job{}, s.wrap(fmt.Sprintf("reschedule job %d", p.ID), err)
	}
	return out, nil
}

// JobRescheduleTx is JobReschedule inside tx, the caller's own pgx
// transaction (glossary, Reschedule: "It can join the caller's
// transaction"). BackWave never commits or rolls back tx.
func (s *Store) JobRescheduleTx(ctx context.Context, tx pgx.Tx, p store.JobRescheduleParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	if err := s.enter(ctx); err != nil {
		return job.Job{}, err
	}
	out, err := s.reschedule(ctx, pgxTxRunner(tx), p)
	return out, s.wrap(fmt.Sprintf("reschedule job %d in the caller's transaction", p.ID), err)
}

// JobRescheduleSQLTx is JobRescheduleTx for database/sql users (a DB on
// pgx's stdlib driver).
func (s *Store) JobRescheduleSQLTx(ctx context.Context, tx *sql.Tx, p store.JobRescheduleParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	if err := s.enter(ctx); err != nil {
		return job.Job{}, err
	}
	out, err := s.reschedule(ctx, sqlRunner{q: tx}, p)
	return out, s.wrap(fmt.Sprintf("reschedule job %d in the caller's transaction", p.ID), err)
}

func (s *Store) reschedule(ctx context.Context, q querier, p store.JobRescheduleParams) (job.Job, error) {
	h, err := s.head(ctx, q, p.ID)
	if err != nil {
		return job.Job{}, err
	}
	if !core.Reschedulable(h.state) {
		return job.Job{}, fmt.Errorf("job %d is %s: %w", p.ID, h.state, store.ErrIllegalTransition)
	}
	at := p.DueAt(h.now.Time)
	if _, err := q.exec(ctx, s.sql(`UPDATE backwave.job SET scheduled_at = $2 WHERE id = $1`), int64(p.ID), at); err != nil {
		return job.Job{}, err
	}
	if err := s.audit(ctx, q, p.Actor, store.AuditReschedule, p.ID, h.queue, store.RescheduleDetail(at)); err != nil {
		return job.Job{}, err
	}
	if !at.After(h.now.Time) {
		if err := s.hint(ctx, q, h.queue); err != nil {
			return job.Job{}, err
		}
	}
	return s.jobIn(ctx, q, p.ID)
}
