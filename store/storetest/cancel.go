package storetest

import (
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testCancel checks the operator cancel (Operator.JobCancel; glossary,
// Cancelled) and how the Storage Contract carries it to a Running job.
func testCancel(t *testing.T, s *suite) {
	// Glossary, Cancelled: "deliberate non-execution, with a recorded cause
	// ... operator action". A Scheduled job is never claimed.
	s.run(t, "ScheduledCancelledAtOnce", func(t *testing.T, e *env) {
		id := e.insertN("q", 1)[0]
		before := e.now()
		got, err := e.s.JobCancel(e.ctx, store.JobCancelParams{ID: id, Actor: actor})
		if err != nil {
			t.Fatalf("JobCancel: %v", err)
		}
		after := e.now()
		if got.State != job.StateCancelled {
			t.Fatalf("JobCancel returned the job %s, want cancelled", got.State)
		}
		j := e.wantState(id, job.StateCancelled)
		if j.CancelCause != job.CancelCauseOperator {
			t.Fatalf("CancelCause = %q, want operator", j.CancelCause)
		}
		e.within("FinalizedAt", j.FinalizedAt, before, after)
		e.claimNone(w1, "q")
		log := e.transitions(id)
		if last := log[len(log)-1]; last.Edge() != (core.Edge{From: job.StateScheduled, To: job.StateCancelled, Via: core.ViaCancel}) {
			t.Fatalf("last Transition Log entry %s, want scheduled -cancel-> cancelled", last.Edge())
		}
	})

	// Glossary, Cancelled: "Cancelling an executing job is cooperative —
	// the handler's CancellationToken fires via heartbeat": the job keeps
	// running, and the outcome the Core then decides (a failure after a
	// cancel request) applies as Cancelled with its slot freed.
	s.run(t, "RunningCancelledCooperatively", func(t *testing.T, e *env) {
		e.setLimit("q", 1)
		e.insertN("q", 2)
		j := e.claimOne(w1, "q")
		got, err := e.s.JobCancel(e.ctx, store.JobCancelParams{ID: j.ID, Actor: actor})
		if err != nil {
			t.Fatalf("JobCancel: %v", err)
		}
		if got.State != job.StateRunning || !got.CancelRequested {
			t.Fatalf("JobCancel returned the job %s, CancelRequested=%t; want running, true", got.State, got.CancelRequested)
		}
		if got := e.wantState(j.ID, job.StateRunning); !got.CancelRequested {
			t.Fatal("CancelRequested not set on the Running job")
		}
		e.renewStatus(w1, j.Lease(), store.RenewCancelRequested)
		j.CancelRequested = true // what the Driver learned from the renewal
		o := failed(j, time.Hour)
		if o.State != job.StateCancelled {
			t.Fatalf("core decided %s, want cancelled", o.State)
		}
		e.reportApplied(w1, o)
		done := e.wantState(j.ID, job.StateCancelled)
		if done.CancelCause != job.CancelCauseOperator || done.FinalizedAt.IsZero() {
			t.Fatalf("cancelled job: CancelCause %q, FinalizedAt %v", done.CancelCause, done.FinalizedAt)
		}
		e.claimOne(w2, "q")
	})

	// Once a cancel is recorded, the store applies Cancelled whatever
	// outcome the worker reports — even a success from a handler that
	// ignored its context (core.UnderCancel cites the glossary: Cancelled
	// "stays Cancelled under every automatic path"; Operator Action;
	// Effect-Once). The Failure Detail and Tag delta ride the fenced write;
	// Job Output does not, being written only with Succeeded.
	cases := []struct {
		name    string
		outcome func(j job.Job) store.Outcome
	}{
		{"Success", succeeded},
		{"Retry", func(j job.Job) store.Outcome { return failed(j, time.Hour) }},
		{"DeadLetter", func(j job.Job) store.Outcome { return decide(j, core.ResultFailedPermanently, 0) }},
		{"Quarantine", func(j job.Job) store.Outcome { return decide(j, core.ResultUnroutable, 0) }},
	}
	for _, c := range cases {
		s.run(t, "CancelWinsOver"+c.name, func(t *testing.T, e *env) {
			e.setLimit("q", 1)
			e.insertN("q", 2)
			j := e.claimOne(w1, "q")
			if err := e.cancel(j.ID); err != nil {
				t.Fatalf("JobCancel: %v", err)
			}
			o := c.outcome(j) // decided before a renewal told the worker
			o.Output = []byte("ignored the context")
			o.FailureDetail = "handler said " + c.name
			o.TagDelta = []job.Tag{job.Label("late")}
			e.reportApplied(w1, o)
			got := e.wantState(j.ID, job.StateCancelled)
			if got.CancelCause != job.CancelCauseOperator || got.FinalizedAt.IsZero() || got.RetryCause != job.RetryCauseNone {
				t.Fatalf("job after %s under cancel: CancelCause %q, FinalizedAt %v, RetryCause %q", c.name, got.CancelCause, got.FinalizedAt, got.RetryCause)
			}
			if len(got.Tags) != 1 || got.Tags[0] != job.Label("late") {
				t.Fatalf("Tags = %v, want the delta [late]", got.Tags)
			}
			if out, err := e.s.JobOutput(e.ctx, j.ID); err != nil || out != nil {
				t.Fatalf("JobOutput = %q, %v; want none (no Succeeded transition)", out, err)
			}
			log := e.transitions(j.ID)
			last := log[len(log)-1]
			if last.Edge() != (core.Edge{From: job.StateRunning, To: job.StateCancelled, Via: core.ViaCancel}) || last.FailureDetail != o.FailureDetail {
				t.Fatalf("last Transition Log entry %s %q, want running -cancel-> cancelled %q", last.Edge(), last.FailureDetail, o.FailureDetail)
			}
			e.claimOne(w2, "q") // the slot was freed
			e.claimNone(w2, "q")
		})
	}

	// A pending cancel request on a Running job whose Lease ends without an
	// outcome ends the job Cancelled instead of sending it back to
	// Scheduled: the operator asked that it not run again (core.LeaseLoss).
	s.run(t, "CancelWinsOverRelinquish", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		if err := e.cancel(j.ID); err != nil {
			t.Fatal(err)
		}
		if got := e.relinquish(w1, j.Lease()); len(got) != 1 {
			t.Fatalf("LeaseRelinquish handed back %v, want %s", got, j.Lease())
		}
		got := e.wantState(j.ID, job.StateCancelled)
		if got.CancelCause != job.CancelCauseOperator {
			t.Fatalf("CancelCause = %q, want operator", got.CancelCause)
		}
		e.claimNone(w2, "q")
	})
	s.run(t, "CancelWinsOverExpiry", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insert(withMax("q", 1), withMax("q", 5))
		jobs := e.claim(w1, 2, "q")
		for _, j := range jobs {
			if err := e.cancel(j.ID); err != nil {
				t.Fatal(err)
			}
		}
		e.advance(lease + time.Second)
		if got := e.expire(0, "q"); len(got) != 2 {
			t.Fatalf("LeaseExpire ended %v, want both", got)
		}
		for _, j := range jobs { // at the ceiling and below it alike
			got := e.wantState(j.ID, job.StateCancelled)
			if got.RetryCause != job.RetryCauseNone {
				t.Fatalf("job %d: Retry Cause %q; a cancel leaves it as it was", j.ID, got.RetryCause)
			}
		}
		e.claimNone(w2, "q")
	})

	// ErrIllegalTransition: "an Operator Action asked for a state change the
	// job's current state does not allow"; ErrNotFound.
	s.run(t, "TerminalAndUnknownRefused", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, succeeded(j))
		done := e.get(j.ID)
		e.wantErr("JobCancel(succeeded job)", e.cancel(j.ID), store.ErrIllegalTransition)
		e.unchanged(done)
		e.wantErr("JobCancel(unknown job)", e.cancel(987654), store.ErrNotFound)
	})
}
