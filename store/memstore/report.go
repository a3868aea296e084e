package memstore

import (
	"bytes"
	"context"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// OutcomeReport applies each outcome whose Lease p.Worker still holds, and
// answers every outcome in input order. An applied outcome, in one step,
// moves the job to the outcome's state (a retry is due at the store's now
// plus RetryDelay) with the outcome's Terminal Cause (none when a recorded
// cancel turns it into Cancelled), applies the Retry Cause rule (core.RetryCauseAfter),
// records the Transition Log entry with the Failure Detail, stores the Job
// Output, merges the Tag delta and frees the Queue's slot. A snooze also
// counts itself in Snoozes and moves AttemptBase up by one, so the Attempt
// it used is not charged. A stale outcome
// mutates nothing and is answered Applied=false. An outcome that is not a
// legal outcome edge out of Running fails the whole call with
// store.ErrInvalidParams before anything is written.
func (s *Store) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()

	now := s.clock.Now()
	var hs hintSet
	out := make([]store.ReportResult, len(p.Outcomes))
	for i, o := range p.Outcomes {
		out[i] = store.ReportResult{Lease: o.Lease}
		r := s.held(p.Worker, o.Lease)
		if r == nil {
			if o.Cursor != nil && s.planted(plant.CursorIgnoresFence) {
				s.saveCursor(s.row(o.Lease.ID), o.Lease, []store.CursorSave{{Lease: o.Lease, Value: o.Cursor}}, now)
			}
			continue
		}
		if o.Cursor != nil {
			r.job.Cursor = &job.Cursor{Attempt: o.Lease.Attempt, Value: bytes.Clone(o.Cursor), At: now}
		}
		applied := core.UnderCancel(o.Outcome, r.job.CancelRequested)
		switch applied.State {
		case job.StateScheduled:
			r.job.ScheduledAt = now.Add(applied.RetryDelay)
			if applied.Via == core.ViaSnooze {
				r.job.Snoozes++
				if !s.planted(plant.SnoozeCharged) {
					r.job.AttemptBase++ // the snoozed Attempt is not charged
				}
			}
		case job.StateCancelled:
			r.job.CancelCause = job.CancelCauseOperator
		case job.StateSucceeded:
			if o.Output != nil {
				r.output = bytes.Clone(o.Output)
			}
		}
		s.addTags(r, o.TagDelta)
		s.moveCaused(r, core.Edge{From: r.job.State, To: applied.State, Via: applied.Via}, applied.TerminalCause, now, o.FailureDetail)
		hs.add(r.job.Queue)
		out[i].Applied = true
	}
	hints = s.hintable(&hs, now)
	return out, nil
}
