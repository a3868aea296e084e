package storetest

import (
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testCancel checks the operator cancel through Harness.RequestCancel
// (glossary, Cancelled) and how the Storage Contract carries it to a
// Running job.
func testCancel(t *testing.T, s *suite) {
	run := func(name string, fn func(t *testing.T, e *env, cancel func(job.ID) error)) {
		s.run(t, name, func(t *testing.T, e *env) {
			if e.h.RequestCancel == nil {
				t.Skip("storetest: the Harness has no RequestCancel")
			}
			fn(t, e, func(id job.ID) error { return e.h.RequestCancel(e.ctx, id) })
		})
	}

	// Glossary, Cancelled: "deliberate non-execution, with a recorded cause
	// ... operator action". A Scheduled job is never claimed.
	run("ScheduledCancelledAtOnce", func(t *testing.T, e *env, cancel func(job.ID) error) {
		id := e.insertN("q", 1)[0]
		before := e.now()
		if err := cancel(id); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		after := e.now()
		j := e.wantState(id, job.StateCancelled)
		if j.CancelCause != job.CancelCauseOperator {
			t.Fatalf("CancelCause = %q, want operator", j.CancelCause)
		}
		e.within("FinalizedAt", j.FinalizedAt, before, after)
		e.claimNone(w1, "q")
	})

	// Glossary, Cancelled: "Cancelling an executing job is cooperative —
	// the handler's CancellationToken fires via heartbeat": the job keeps
	// running, and the outcome the Core then decides (a failure after a
	// cancel request) applies as Cancelled with its slot freed.
	run("RunningCancelledCooperatively", func(t *testing.T, e *env, cancel func(job.ID) error) {
		e.setLimit("q", 1)
		e.insertN("q", 2)
		j := e.claimOne(w1, "q")
		if err := cancel(j.ID); err != nil {
			t.Fatalf("RequestCancel: %v", err)
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
		got := e.wantState(j.ID, job.StateCancelled)
		if got.CancelCause != job.CancelCauseOperator || got.FinalizedAt.IsZero() {
			t.Fatalf("cancelled job: CancelCause %q, FinalizedAt %v", got.CancelCause, got.FinalizedAt)
		}
		e.claimOne(w2, "q")
	})

	// Decide: "success → Succeeded, even if a cancel was requested
	// meanwhile (the work is done)".
	run("RunningMaySucceedAnyway", func(t *testing.T, e *env, cancel func(job.ID) error) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		if err := cancel(j.ID); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		e.reportApplied(w1, decide(j, core.ResultSucceeded, 0))
		e.wantState(j.ID, job.StateSucceeded)
	})

	// ErrIllegalTransition: "an Operator Action asked for a state change the
	// job's current state does not allow"; ErrNotFound.
	run("TerminalAndUnknownRefused", func(t *testing.T, e *env, cancel func(job.ID) error) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, succeeded(j))
		done := e.get(j.ID)
		e.wantErr("RequestCancel(succeeded job)", cancel(j.ID), store.ErrIllegalTransition)
		e.unchanged(done)
		e.wantErr("RequestCancel(unknown job)", cancel(987654), store.ErrNotFound)
	})
}
