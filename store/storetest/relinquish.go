package storetest

import (
	"slices"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testRelinquish(t *testing.T, s *suite) {
	// LeaseRelinquish: "the job returns to Scheduled due at once with its
	// Attempt kept and its Retry Cause untouched"; glossary, Relinquish:
	// "no retry backoff, because a clean stop is not a failure".
	s.run(t, "BackToScheduledAtOnce", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		before := e.now()
		got := e.relinquish(w1, j.Lease())
		after := e.now()
		if !slices.Equal(got, []job.Lease{j.Lease()}) {
			t.Fatalf("LeaseRelinquish handed back %v, want [%s]", got, j.Lease())
		}
		stored := e.wantState(j.ID, job.StateScheduled)
		e.within("ScheduledAt", stored.ScheduledAt, before, after)
		if stored.Attempt != 1 || stored.RetryCause != job.RetryCauseNone || stored.Retrying() {
			t.Fatalf("relinquished job: Attempt %d, Retry Cause %q; want 1, none (not Retrying)", stored.Attempt, stored.RetryCause)
		}
		// Claimable at once, at a new Attempt: job.Attempt "never reuses a
		// number".
		if again := e.claimOne(w2, "q"); again.Lease() != (job.Lease{ID: j.ID, Attempt: 2}) {
			t.Fatalf("claimed %s after Relinquish, want %d@2", again.Lease(), j.ID)
		}
	})

	// Retry Cause: "Sticky: a claim, a Relinquish ... leave it as it is".
	s.run(t, "RetryCauseUntouched", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, failed(j, 0))
		j = e.claimOne(w1, "q")
		e.relinquish(w1, j.Lease())
		if got := e.wantState(j.ID, job.StateScheduled).RetryCause; got != job.RetryCauseHandlerFailed {
			t.Fatalf("Retry Cause after Relinquish = %q, want handler_failed kept", got)
		}
	})

	// LeaseRelinquish: "or dead-letters if the Attempt was its last
	// (core.AfterLeaseLoss)"; glossary, Relinquish: "the attempt ceiling
	// still dead-letters a job that has had enough tries".
	s.run(t, "AtCeilingDeadLetters", func(t *testing.T, e *env) {
		e.insert(withMax("q", 1))
		j := e.claimOne(w1, "q")
		if got := e.relinquish(w1, j.Lease()); len(got) != 1 {
			t.Fatalf("LeaseRelinquish handed back %v, want [%s]", got, j.Lease())
		}
		stored := e.wantState(j.ID, job.StateDeadLettered)
		if stored.FinalizedAt.IsZero() || stored.RetryCause != job.RetryCauseNone {
			t.Fatalf("dead-lettered job: FinalizedAt %v, Retry Cause %q; want set, none", stored.FinalizedAt, stored.RetryCause)
		}
		e.claimNone(w1, "q")
	})

	// LeaseRelinquish is "fenced by (Worker, Attempt)": "Stale Leases are
	// skipped".
	s.run(t, "StaleSkipped", func(t *testing.T, e *env) {
		e.insertN("q", 2)
		jobs := e.claim(w1, 2, "q")
		wrongAttempt := job.Lease{ID: jobs[0].ID, Attempt: 2}
		if got := e.relinquish(w2, jobs[0].Lease()); len(got) != 0 {
			t.Fatalf("another worker relinquished %v", got)
		}
		got := e.relinquish(w1, wrongAttempt, jobs[1].Lease(), job.Lease{ID: 987654, Attempt: 1})
		if !slices.Equal(got, []job.Lease{jobs[1].Lease()}) {
			t.Fatalf("LeaseRelinquish handed back %v, want only [%s]", got, jobs[1].Lease())
		}
		e.unchanged(jobs[0])
		// Handing back twice: the second is stale.
		if got := e.relinquish(w1, jobs[1].Lease()); len(got) != 0 {
			t.Fatalf("a second Relinquish handed back %v", got)
		}
	})

	// LeaseRelinquish: "Slots are freed".
	s.run(t, "FreesSlot", func(t *testing.T, e *env) {
		e.setLimit("q", 1)
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.claimNone(w2, "q")
		e.relinquish(w1, j.Lease())
		if got := e.running("q"); got != 0 {
			t.Fatalf("Running = %d after Relinquish, want 0", got)
		}
		e.claimOne(w2, "q")
	})

	// A relinquished Lease is over: its late outcome is stale (the fence).
	s.run(t, "LateOutcomeStale", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.relinquish(w1, j.Lease())
		e.reportStale(w1, succeeded(j))
		e.renewStatus(w1, j.Lease(), store.RenewLost)
	})
}
