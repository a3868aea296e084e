package storetest

import (
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// snoozeCap is the snooze cap the clauses below decide against, as a
// Driver configured with it would.
const snoozeCap = 2

// snoozed returns the outcome the Core decides for a claimed job whose
// handler snoozed for d, against snoozeCap.
func snoozed(j job.Job, d time.Duration) store.Outcome {
	info := core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.Ceiling(), CancelRequested: j.CancelRequested,
		Snoozes: j.Snoozes, MaxSnoozes: snoozeCap, SnoozeDelay: d}
	return store.Outcome{Outcome: core.Decide(info, core.ResultSnoozed, policy(time.Hour)), FailureDetail: "snoozed for " + d.String()}
}

func testSnooze(t *testing.T, s *suite) {
	// OutcomeReport: "A snooze (core.ViaSnooze) becomes due at the store's
	// now + RetryDelay like a retry, keeps the Retry Cause, adds one to the
	// job's Snoozes and one to its AttemptBase, so the Attempt it used is
	// not charged against the attempt budget". A job with a budget of one
	// Attempt snoozes, runs again and fails: only the failed Attempt was
	// charged, so it dead-letters then, not at the snooze.
	s.run(t, "BudgetNotCharged", func(t *testing.T, e *env) {
		id := e.insert(withMax("q", 1))[0]
		j := e.claimOne(w1, "q")
		o := snoozed(j, 0)
		if o.Via != core.ViaSnooze {
			t.Fatalf("the Core decided %s for a first snooze, want %s", o.Via, core.ViaSnooze)
		}
		e.reportApplied(w1, o)
		got := e.wantState(id, job.StateScheduled)
		if got.Snoozes != 1 || got.AttemptBase != 1 || got.Attempt != 1 || got.Ceiling() != 2 {
			t.Fatalf("after a snooze: Snoozes %d, AttemptBase %d, Attempt %d, ceiling %d; want 1, 1, 1, 2",
				got.Snoozes, got.AttemptBase, got.Attempt, got.Ceiling())
		}
		if got.RetryCause != job.RetryCauseNone {
			t.Fatalf("a snooze set Retry Cause %q", got.RetryCause)
		}
		j = e.claimOne(w1, "q")
		if j.Attempt != 2 || j.Snoozes != 1 || j.Ceiling() != 2 {
			t.Fatalf("claim after a snooze: Attempt %d, Snoozes %d, ceiling %d; want 2, 1, 2", j.Attempt, j.Snoozes, j.Ceiling())
		}
		e.reportApplied(w1, failed(j, time.Hour))
		e.wantState(id, job.StateDeadLettered)
	})

	// "keeps the Retry Cause" (core.RetryCauseAfter): a snooze after a
	// failed Attempt leaves handler failed in place.
	s.run(t, "KeepsRetryCause", func(t *testing.T, e *env) {
		id := e.insert(withMax("q", 5))[0]
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, failed(j, 0))
		j = e.claimOne(w1, "q")
		e.reportApplied(w1, snoozed(j, 0))
		if got := e.wantState(id, job.StateScheduled); got.RetryCause != job.RetryCauseHandlerFailed {
			t.Fatalf("Retry Cause after a snooze = %q, want %q kept", got.RetryCause, job.RetryCauseHandlerFailed)
		}
	})

	// "becomes due at the store's now + RetryDelay".
	s.run(t, "DueAfterDelay", func(t *testing.T, e *env) {
		e.needAdvance()
		id := e.insertN("q", 1)[0]
		j := e.claimOne(w1, "q")
		before := e.now()
		e.reportApplied(w1, snoozed(j, time.Hour))
		after := e.now()
		got := e.wantState(id, job.StateScheduled)
		e.within("ScheduledAt", got.ScheduledAt, before.Add(time.Hour), after.Add(time.Hour))
		e.claimNone(w1, "q")
		e.advance(time.Hour + time.Second)
		if j = e.claimOne(w1, "q"); j.ID != id {
			t.Fatalf("claimed %d after the snooze, want %d", j.ID, id)
		}
	})

	// The cap (core.SnoozeCapped): snoozes below it are free; the one at it
	// is charged like a failure, a retry with Retry Cause handler failed,
	// and counts in no snooze. Snoozes is never reset by the store.
	s.run(t, "Cap", func(t *testing.T, e *env) {
		id := e.insert(withMax("q", 5))[0]
		for i := range snoozeCap {
			j := e.claimOne(w1, "q")
			e.reportApplied(w1, snoozed(j, 0))
			if got := e.get(id); got.Snoozes != i+1 || got.AttemptBase != job.Attempt(i+1) {
				t.Fatalf("snooze %d: Snoozes %d, AttemptBase %d; want %d, %d", i+1, got.Snoozes, got.AttemptBase, i+1, i+1)
			}
		}
		j := e.claimOne(w1, "q")
		o := snoozed(j, 0)
		if o.Via != core.ViaRetry {
			t.Fatalf("the Core decided %s for a snooze at the cap, want %s", o.Via, core.ViaRetry)
		}
		e.reportApplied(w1, o)
		got := e.wantState(id, job.StateScheduled)
		if got.Snoozes != snoozeCap || got.AttemptBase != snoozeCap || got.RetryCause != job.RetryCauseHandlerFailed {
			t.Fatalf("charged snooze: Snoozes %d, AttemptBase %d, Retry Cause %q; want %d, %d, %q",
				got.Snoozes, got.AttemptBase, got.RetryCause, snoozeCap, snoozeCap, job.RetryCauseHandlerFailed)
		}
	})

	// The package doc, The fence: a snooze is an outcome like any other, so
	// one from another worker or another Attempt mutates nothing.
	s.run(t, "Fenced", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.reportStale(w2, snoozed(j, time.Minute))
		o := snoozed(j, time.Minute)
		o.Lease.Attempt = j.Attempt + 1
		e.reportStale(w1, o)
		e.reportApplied(w1, snoozed(j, time.Minute))
		// The Attempt the snooze ended is stale now.
		e.reportStale(w1, snoozed(j, time.Minute))
	})

	// The Transition Log records the snooze as an edge of its own:
	// running → scheduled via snooze, at the snoozed Attempt, with the
	// detail the Shell gave it.
	s.run(t, "TransitionLog", func(t *testing.T, e *env) {
		id := e.insertN("q", 1)[0]
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, snoozed(j, time.Minute))
		log := e.transitions(id)
		last := log[len(log)-1]
		if last.From != job.StateRunning || last.State != job.StateScheduled || last.Via != core.ViaSnooze || last.Attempt != 1 {
			t.Fatalf("last Transition Log entry %+v, want running -> scheduled via snooze at Attempt 1", last)
		}
		if last.FailureDetail != "snoozed for 1m0s" { // the default Job History Policy keeps it
			t.Fatalf("snooze entry's detail %q, want %q", last.FailureDetail, "snoozed for 1m0s")
		}
	})

	// "A recorded cancel wins over a snooze as over any outcome": the job
	// ends Cancelled, its snooze not counted.
	s.run(t, "CancelWins", func(t *testing.T, e *env) {
		id := e.insertN("q", 1)[0]
		j := e.claimOne(w1, "q")
		if err := e.cancel(id); err != nil {
			t.Fatal(err)
		}
		e.reportApplied(w1, snoozed(j, time.Minute)) // decided before the Driver heard of the cancel
		if got := e.wantState(id, job.StateCancelled); got.Snoozes != 0 || got.AttemptBase != 0 {
			t.Fatalf("cancelled snooze: Snoozes %d, AttemptBase %d; want 0, 0", got.Snoozes, got.AttemptBase)
		}
	})

	// LeaseExpire's ceiling ("Dead-Lettered at the attempt ceiling") counts
	// charged Attempts only: a job with a budget of two that snoozed once
	// and then lapsed on its second Attempt has spent one, and retries.
	s.run(t, "ExpiryAfterSnooze", func(t *testing.T, e *env) {
		e.needAdvance()
		id := e.insert(withMax("q", 2))[0]
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, snoozed(j, 0))
		e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		e.expire(0, "q")
		e.wantState(id, job.StateScheduled)
		if j = e.claimOne(w1, "q"); j.Attempt != 3 || j.Ceiling() != 3 {
			t.Fatalf("claim after the expiry: Attempt %d, ceiling %d; want 3, 3", j.Attempt, j.Ceiling())
		}
		e.advance(lease + time.Second)
		e.expire(0, "q")
		e.wantState(id, job.StateDeadLettered)
	})

	// Bad input: OutcomeReport refuses a snooze whose delay
	// core.CheckSnoozeDelay refuses, with ErrInvalidParams, and writes
	// nothing.
	s.run(t, "BadDelay", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		for _, d := range []time.Duration{-time.Second, core.MaxSnoozeDelay + time.Second} {
			o := snoozed(j, 0)
			o.RetryDelay = d
			_, err := e.s.OutcomeReport(e.ctx, store.ReportParams{Worker: w1, Outcomes: []store.Outcome{o}})
			e.wantErr("snooze of "+d.String(), err, store.ErrInvalidParams)
			e.unchanged(j)
		}
		e.reportApplied(w1, snoozed(j, core.MaxSnoozeDelay))
	})
}
