package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobRequeue moves a Dead-Lettered or Quarantined job back to Scheduled,
// due at the store's now, with its Retry Cause cleared and a fresh attempt
// budget (AttemptBase moves up to its Attempt, which is kept). Any other
// state fails with store.ErrIllegalTransition, an unknown job with
// store.ErrNotFound. The action is audited.
func (s *Store) JobRequeue(ctx context.Context, p store.JobRequeueParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return job.Job{}, err
	}
	defer s.mu.Unlock()
	r, err := s.find(p.ID)
	if err != nil {
		return job.Job{}, err
	}
	if !core.Requeueable(r.job.State) {
		return job.Job{}, fmt.Errorf("memstore: requeue job %d: it is %s: %w", p.ID, r.job.State, store.ErrIllegalTransition)
	}
	now := s.clock.Now()
	r.job.AttemptBase = r.job.Attempt
	r.job.ScheduledAt = now
	r.job.FinalizedAt = time.Time{}
	r.job.CancelCause = job.CancelCauseNone
	r.job.CancelRequested = false
	s.move(r, job.StateScheduled, core.ViaRequeue, now, "")
	s.record(now, p.Actor, store.AuditRequeue, r.job.ID, r.job.Queue, "")
	hints = s.hintable(&hintSet{queues: []string{r.job.Queue}}, now)
	return copyJob(&r.job), nil
}

// JobCancel is the operator cancel. A Scheduled or Awaiting-Parent job
// becomes Cancelled at once, with cancel cause operator. A Running job keeps
// running with CancelRequested set: its worker learns of it at the next
// LeaseRenew (store.RenewCancelRequested) and stops its handler
// cooperatively, and however that Attempt ends the job ends Cancelled.
// Asking again is harmless. A terminal job fails with
// store.ErrIllegalTransition, an unknown one with store.ErrNotFound. The
// action is audited. A job cancelled at once is counted against its
// dependents' latches in the same step (settle).
func (s *Store) JobCancel(ctx context.Context, p store.JobCancelParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return job.Job{}, err
	}
	defer s.mu.Unlock()
	r, err := s.find(p.ID)
	if err != nil {
		return job.Job{}, err
	}
	now := s.clock.Now()
	switch core.OperatorCancel(r.job.State) {
	case core.CancelAtOnce:
		r.job.CancelCause = job.CancelCauseOperator
		s.move(r, job.StateCancelled, core.ViaCancel, now, "")
		s.record(now, p.Actor, store.AuditCancel, r.job.ID, r.job.Queue, "")
		hints = s.hintable(&hintSet{}, now) // dependents the cancel released
	case core.CancelRequest:
		r.job.CancelRequested = true
		s.record(now, p.Actor, store.AuditCancelRequest, r.job.ID, r.job.Queue, "")
	case core.CancelRefused:
		return job.Job{}, fmt.Errorf("memstore: cancel job %d: it is %s: %w", p.ID, r.job.State, store.ErrIllegalTransition)
	}
	return copyJob(&r.job), nil
}

// RequestCancel is JobCancel by store.ActorSystem, for callers that predate
// the audited action (the Simulator).
func (s *Store) RequestCancel(ctx context.Context, id job.ID) error {
	_, err := s.JobCancel(ctx, store.JobCancelParams{ID: id})
	return err
}

// JobReschedule moves the due time of a Scheduled or Awaiting-Parent job
// to p.ScheduledAt, keeping everything else; no Transition Log entry is
// written. A Running or terminal job fails with store.ErrIllegalTransition.
// The action is audited.
func (s *Store) JobReschedule(ctx context.Context, p store.JobRescheduleParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return job.Job{}, err
	}
	defer s.mu.Unlock()
	r, err := s.find(p.ID)
	if err != nil {
		return job.Job{}, err
	}
	if !core.Reschedulable(r.job.State) {
		return job.Job{}, fmt.Errorf("memstore: reschedule job %d: it is %s: %w", p.ID, r.job.State, store.ErrIllegalTransition)
	}
	now := s.clock.Now()
	at := p.DueAt(now)
	r.job.ScheduledAt = at.Round(0)
	s.record(now, p.Actor, store.AuditReschedule, r.job.ID, r.job.Queue, store.RescheduleDetail(at))
	if core.Claimable(&r.job, now) {
		hints = s.hintable(&hintSet{queues: []string{r.job.Queue}}, now)
	}
	return copyJob(&r.job), nil
}

// JobDelete removes one terminal job with everything JobPurge removes
// beside it, and records the action (store.Operator.JobDelete). A live job
// fails with store.ErrIllegalTransition; one JobPurge would keep
// (stillNeeded) with an error wrapping store.ErrStillNeeded; an unknown
// one with store.ErrNotFound.
func (s *Store) JobDelete(ctx context.Context, p store.JobDeleteParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	if err := s.lock(ctx); err != nil {
		return job.Job{}, err
	}
	defer s.mu.Unlock()
	r, err := s.find(p.ID)
	if err != nil {
		return job.Job{}, err
	}
	if !r.job.State.Terminal() {
		return job.Job{}, fmt.Errorf("memstore: delete job %d: it is %s: %w", p.ID, r.job.State, store.ErrIllegalTransition)
	}
	if err := s.stillNeeded(r); err != nil {
		return job.Job{}, fmt.Errorf("memstore: %w", err)
	}
	out := copyJob(&r.job)
	s.remove(r)
	s.afterRemove(map[string]map[job.ID]bool{out.Queue: {out.ID: true}})
	s.record(s.clock.Now(), p.Actor, store.AuditDelete, out.ID, out.Queue, store.DeleteDetail(out.WireName))
	return out, nil
}

// record appends one entry to the audit trail. The caller holds s.mu.
func (s *Store) record(now time.Time, a store.Actor, action store.AuditAction, id job.ID, queue, detail string) {
	s.audit = append(s.audit, store.AuditEntry{
		ID:     int64(len(s.audit) + 1),
		At:     now,
		Actor:  a.OrSystem(),
		Action: action,
		JobID:  id,
		Queue:  queue,
		Detail: detail,
	})
}
