package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testExpire(t *testing.T, s *suite) {
	// LeaseExpire "finds Running jobs in the given Queues whose Lease lapsed
	// at the store's clock": a live Lease is left alone.
	s.run(t, "LiveLeaseKept", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.advance(lease - time.Second)
		if got := e.expire(0, "q"); len(got) != 0 {
			t.Fatalf("LeaseExpire ended live Leases %v", got)
		}
		e.unchanged(j)
	})

	// LeaseExpire: "otherwise Scheduled and due now with Retry Cause lease
	// expired"; glossary, Attempt: "A lease expiry counts as an attempt" —
	// the next claim charges a new one.
	s.run(t, "CountsAnAttempt", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		before := e.now()
		got := e.expire(0, "q")
		after := e.now()
		if !slices.Equal(got, []job.Lease{j.Lease()}) {
			t.Fatalf("LeaseExpire ended %v, want [%s]", got, j.Lease())
		}
		stored := e.wantState(j.ID, job.StateScheduled)
		e.within("ScheduledAt", stored.ScheduledAt, before, after)
		if stored.Attempt != 1 || stored.RetryCause != job.RetryCauseLeaseExpired {
			t.Fatalf("expired job: Attempt %d, Retry Cause %q; want 1, lease_expired", stored.Attempt, stored.RetryCause)
		}
		if again := e.claimOne(w2, "q"); again.Lease() != (job.Lease{ID: j.ID, Attempt: 2}) {
			t.Fatalf("claimed %s after expiry, want %d@2", again.Lease(), j.ID)
		}
	})

	// LeaseExpire: "Dead-Lettered at the attempt ceiling" (core.AfterLeaseLoss).
	// Glossary, Retry Cause: a terminal outcome leaves the cause as it is —
	// the job keeps handler_failed from its last retry, not lease_expired.
	s.run(t, "AtCeilingDeadLetters", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insert(withMax("q", 2))
		first := e.claimOne(w1, "q")
		e.reportApplied(w1, failed(first, 0))
		second := e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		before := e.now()
		if got := e.expire(0, "q"); !slices.Equal(got, []job.Lease{second.Lease()}) {
			t.Fatalf("LeaseExpire ended %v, want [%s]", got, second.Lease())
		}
		after := e.now()
		stored := e.wantState(second.ID, job.StateDeadLettered)
		e.within("FinalizedAt", stored.FinalizedAt, before, after)
		want := job.RetryCauseHandlerFailed
		if stored.Attempt != 2 || stored.RetryCause != want {
			t.Fatalf("dead-lettered job: Attempt %d, Retry Cause %q; want 2, %q", stored.Attempt, stored.RetryCause, want)
		}
		e.claimNone(w1, "q")
	})

	// LeaseExpire: "Slots are freed"; glossary, Concurrency Limit: "A slot
	// is released on terminal state or Lease expiry — never leaked by a
	// crash".
	s.run(t, "FreesSlot", func(t *testing.T, e *env) {
		e.needAdvance()
		e.setLimit("q", 1)
		e.insertN("q", 1)
		e.insert(withMax("q", 1))
		e.claimOne(w1, "q")
		e.claimNone(w2, "q")
		e.advance(lease + time.Second)
		e.expire(0, "q")
		if got := e.running("q"); got != 0 {
			t.Fatalf("Running = %d after expiry, want 0", got)
		}
		second := e.claimOne(w2, "q")
		e.advance(lease + time.Second)
		e.expire(0, "q") // at its ceiling: Dead-Lettered, slot freed too
		e.wantState(second.ID, job.StateDeadLettered)
		if got := e.running("q"); got != 0 {
			t.Fatalf("Running = %d after a dead-lettering expiry, want 0", got)
		}
		e.claimOne(w2, "q")
	})

	// LeaseExpire sweeps only "the given Queues"; ExpireParams.Queues:
	// "empty means none".
	s.run(t, "OnlyGivenQueues", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("a", 1)
		e.insertN("b", 1)
		a := e.claimOne(w1, "a")
		b := e.claimOne(w1, "b")
		e.advance(lease + time.Second)
		if got := e.expire(0); len(got) != 0 {
			t.Fatalf("LeaseExpire with no Queues ended %v", got)
		}
		if got := e.expire(0, "b", "c"); !slices.Equal(got, []job.Lease{b.Lease()}) {
			t.Fatalf("LeaseExpire([b c]) ended %v, want [%s]", got, b.Lease())
		}
		e.unchanged(a)
	})

	// ExpireParams.Limit: "bounds how many jobs one call expires";
	// ExpireResult.Expired "in id order".
	s.run(t, "LimitAndOrder", func(t *testing.T, e *env) {
		e.needAdvance()
		inserted := e.insertN("q", 5)
		e.claim(w1, 5, "q")
		e.advance(lease + time.Second)
		var all []job.Lease
		for _, limit := range []int{2, 2, 2} {
			got := e.expire(limit, "q")
			if len(got) > limit {
				t.Fatalf("LeaseExpire(limit %d) ended %d Leases", limit, len(got))
			}
			if !slices.IsSortedFunc(got, func(a, b job.Lease) int { return int(a.ID - b.ID) }) {
				t.Fatalf("Expired %v is not in id order", got)
			}
			all = append(all, got...)
		}
		if len(all) != 5 {
			t.Fatalf("three calls with limit 2 ended %d of 5 lapsed Leases", len(all))
		}
		var got []job.ID
		for _, l := range all {
			got = append(got, l.ID)
		}
		e.wantIDs("expired jobs", sorted(got), sorted(inserted))
	})

	// ExpireParams.Limit: "0 means no bound".
	s.run(t, "NoLimit", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 7)
		e.claim(w1, 7, "q")
		e.advance(lease + time.Second)
		if got := e.expire(0, "q"); len(got) != 7 {
			t.Fatalf("LeaseExpire(limit 0) ended %d of 7 Leases", len(got))
		}
	})

	// Terminal and Scheduled jobs are not Running: an expiry sweep leaves
	// them alone.
	s.run(t, "IgnoresJobsNotRunning", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 2)
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, succeeded(j))
		e.advance(lease + time.Second)
		if got := e.expire(0, "q"); len(got) != 0 {
			t.Fatalf("LeaseExpire ended %v with no Running job", got)
		}
		if got, err := e.s.JobCountByState(e.ctx, store.CountParams{Queue: "q"}); err != nil || got[job.StateSucceeded] != 1 || got[job.StateScheduled] != 1 {
			t.Fatalf("JobCountByState = %v, %v; want 1 succeeded, 1 scheduled", got, err)
		}
	})
}
