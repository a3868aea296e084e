package storetest

import (
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testRenew(t *testing.T, s *suite) {
	// LeaseRenew: "extends each named Lease still held by Worker to the
	// store's now + LeaseDuration" and answers renewed.
	s.run(t, "Renewed", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		if e.h.Advance != nil {
			e.advance(lease / 2)
		}
		before := e.now()
		res := e.renew(w1, time.Hour, j.Lease())
		after := e.now()
		if res[0].Status != store.RenewRenewed {
			t.Fatalf("LeaseRenew = %s, want renewed", res[0].Status)
		}
		got := e.wantState(j.ID, job.StateRunning)
		e.within("LeaseExpiresAt", got.LeaseExpiresAt, before.Add(time.Hour), after.Add(time.Hour))
		if got.Attempt != 1 || got.Worker != w1 {
			t.Fatalf("renewal changed the Lease holder: Attempt %d, Worker %q", got.Attempt, got.Worker)
		}
	})

	// LeaseRenew: lost — "the job is no longer Running under this worker
	// and Attempt". The package doc's fence, by worker.
	s.run(t, "LostWrongWorker", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.renewStatus(w2, j.Lease(), store.RenewLost)
		e.unchanged(j)
	})

	// The fence, by Attempt.
	s.run(t, "LostWrongAttempt", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		for _, a := range []job.Attempt{0, 2} {
			e.renewStatus(w1, job.Lease{ID: j.ID, Attempt: a}, store.RenewLost)
		}
		e.unchanged(j)
	})

	// Lost once the job is no longer Running: terminal.
	s.run(t, "LostAfterOutcome", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, succeeded(j))
		after := e.get(j.ID)
		e.renewStatus(w1, j.Lease(), store.RenewLost)
		e.unchanged(after)
	})

	// Lost for a job the store never had.
	s.run(t, "LostUnknownJob", func(t *testing.T, e *env) {
		e.renewStatus(w1, job.Lease{ID: 987654, Attempt: 1}, store.RenewLost)
	})

	// Lost once the Lease expired, even after the job was claimed again at a
	// new Attempt (glossary, Lease: "Expiry makes the job claimable again").
	s.run(t, "LostAfterExpiry", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		if got := e.expire(0, "q"); len(got) != 1 {
			t.Fatalf("LeaseExpire ended %v, want the one lapsed Lease", got)
		}
		e.renewStatus(w1, j.Lease(), store.RenewLost)
		again := e.claimOne(w1, "q")
		e.renewStatus(w1, j.Lease(), store.RenewLost)
		e.renewStatus(w1, again.Lease(), store.RenewRenewed)
	})

	// LeaseRenew answers "per Lease, in input order"; the package doc,
	// Batches: "one stale outcome does not stop the others".
	s.run(t, "MixedBatchInInputOrder", func(t *testing.T, e *env) {
		e.insertN("q", 2)
		jobs := e.claim(w1, 2, "q")
		stale := job.Lease{ID: jobs[0].ID, Attempt: 9}
		res := e.renew(w1, lease, jobs[1].Lease(), stale, jobs[0].Lease())
		want := []store.RenewStatus{store.RenewRenewed, store.RenewLost, store.RenewRenewed}
		for i, r := range res {
			if r.Status != want[i] {
				t.Fatalf("result %d (%s) = %s, want %s", i, r.Lease, r.Status, want[i])
			}
		}
	})

	// A renewal keeps a Lease alive past its first expiry time: glossary,
	// Lease, "heartbeat-renewed".
	s.run(t, "RenewalPostponesExpiry", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.advance(lease / 2)
		e.renewStatus(w1, j.Lease(), store.RenewRenewed)
		e.advance(lease/2 + time.Second)
		if got := e.expire(0, "q"); len(got) != 0 {
			t.Fatalf("LeaseExpire ended renewed Leases %v", got)
		}
		e.renewStatus(w1, j.Lease(), store.RenewRenewed)
	})

	// RenewCancelRequested: "the Lease is extended and an operator asked the
	// job to stop"; glossary, Cancelled: "the handler's CancellationToken
	// fires via heartbeat".
	s.run(t, "CancelRequested", func(t *testing.T, e *env) {
		e.insertN("q", 2)
		jobs := e.claim(w1, 2, "q")
		if err := e.cancel(jobs[0].ID); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		before := e.now()
		res := e.renew(w1, time.Hour, jobs[0].Lease(), jobs[1].Lease())
		after := e.now()
		if res[0].Status != store.RenewCancelRequested || res[1].Status != store.RenewRenewed {
			t.Fatalf("LeaseRenew = [%s %s], want [cancel_requested renewed]", res[0].Status, res[1].Status)
		}
		got := e.wantState(jobs[0].ID, job.StateRunning)
		e.within("LeaseExpiresAt", got.LeaseExpiresAt, before.Add(time.Hour), after.Add(time.Hour))
		if !got.CancelRequested {
			t.Fatal("CancelRequested is not set on the stored job")
		}
		// It keeps saying so until the job stops.
		e.renewStatus(w1, jobs[0].Lease(), store.RenewCancelRequested)
		// Another worker's renewal of it is still lost.
		e.renewStatus(w2, jobs[0].Lease(), store.RenewLost)
	})
}
