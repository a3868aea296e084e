package storetest

import (
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testTerminalCause(t *testing.T, s *suite) {
	// job.Job.TerminalCause: why a Dead-Lettered or Quarantined job ended
	// so. OutcomeReport stores the outcome's cause (core.Decide); every
	// read (JobGet, JobList) returns it; JobRequeue clears it with the state
	// it explains, so the claim of the requeued job reads none.
	s.run(t, "StoredReadAndRequeueClears", func(t *testing.T, e *env) {
		for _, c := range []struct {
			job    store.NewJob
			result core.Result
			state  job.State
			want   job.TerminalCause
		}{
			{withMax("q", 1), core.ResultFailed, job.StateDeadLettered, job.TerminalCauseCeilingReached},
			{withMax("q", 5), core.ResultFailedPermanently, job.StateDeadLettered, job.TerminalCausePermanentFailure},
			{withMax("q", 5), core.ResultUnroutable, job.StateQuarantined, job.TerminalCauseNoHandler},
			{withMax("q", 5), core.ResultUndecodable, job.StateQuarantined, job.TerminalCauseUndecodablePayload},
		} {
			id := e.insert(c.job)[0]
			j := e.claimOne(w1, "q")
			if j.ID != id || j.TerminalCause != job.TerminalCauseNone {
				t.Fatalf("claimed %d with cause %q, want %d with none", j.ID, j.TerminalCause, id)
			}
			e.reportApplied(w1, decide(j, c.result, time.Hour))
			if got := e.wantState(id, c.state); got.TerminalCause != c.want {
				t.Fatalf("%s: JobGet reads cause %q, want %q", c.result, got.TerminalCause, c.want)
			}
			listed := e.listJobs(store.JobListParams{JobFilter: store.JobFilter{States: []job.State{c.state}}})
			if len(listed) == 0 || listed[0].ID != id || listed[0].TerminalCause != c.want {
				t.Fatalf("%s: JobList reads %+v, want job %d first with cause %q", c.result, listed, id, c.want)
			}
			got, err := e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: id, Actor: actor})
			if err != nil {
				t.Fatalf("JobRequeue(%d): %v", id, err)
			}
			if got.TerminalCause != job.TerminalCauseNone {
				t.Fatalf("JobRequeue returned cause %q, want none", got.TerminalCause)
			}
			if stored := e.wantState(id, job.StateScheduled); stored.TerminalCause != job.TerminalCauseNone {
				t.Fatalf("requeued job keeps cause %q", stored.TerminalCause)
			}
			again := e.claimOne(w1, "q")
			if again.ID != id || again.TerminalCause != job.TerminalCauseNone {
				t.Fatalf("claimed %d with cause %q after requeue, want %d with none", again.ID, again.TerminalCause, id)
			}
			e.reportApplied(w1, succeeded(again))
			if stored := e.wantState(id, job.StateSucceeded); stored.TerminalCause != job.TerminalCauseNone {
				t.Fatalf("succeeded job carries cause %q", stored.TerminalCause)
			}
		}
	})

	// core.TerminalCauseAfter: a Lease lost at the attempt ceiling, by
	// Relinquish or by expiry, dead-letters with ceiling reached.
	s.run(t, "RelinquishAtCeiling", func(t *testing.T, e *env) {
		id := e.insert(withMax("q", 1))[0]
		j := e.claimOne(w1, "q")
		e.relinquish(w1, j.Lease())
		if got := e.wantState(id, job.StateDeadLettered); got.TerminalCause != job.TerminalCauseCeilingReached {
			t.Fatalf("relinquished at the ceiling: cause %q, want ceiling_reached", got.TerminalCause)
		}
	})
	s.run(t, "ExpireAtCeiling", func(t *testing.T, e *env) {
		e.needAdvance()
		id := e.insert(withMax("q", 1))[0]
		e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		e.expire(0, "q")
		if got := e.wantState(id, job.StateDeadLettered); got.TerminalCause != job.TerminalCauseCeilingReached {
			t.Fatalf("expired at the ceiling: cause %q, want ceiling_reached", got.TerminalCause)
		}
	})

	// core.UnderCancel: a recorded cancel wins over every outcome, so the
	// job ends Cancelled and carries no Terminal Cause.
	s.run(t, "CancelWinsWithoutCause", func(t *testing.T, e *env) {
		for _, r := range []core.Result{core.ResultFailedPermanently, core.ResultUndecodable} {
			id := e.insert(withMax("q", 5))[0]
			j := e.claimOne(w1, "q")
			if err := e.cancel(id); err != nil {
				t.Fatalf("JobCancel(%d): %v", id, err)
			}
			e.reportApplied(w1, decide(j, r, time.Hour)) // Decide has not heard of the cancel
			if got := e.wantState(id, job.StateCancelled); got.TerminalCause != job.TerminalCauseNone {
				t.Fatalf("%s under cancel: cause %q, want none", r, got.TerminalCause)
			}
		}
	})
}
