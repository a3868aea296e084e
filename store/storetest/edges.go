package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// runEdges runs the edge cases of the Storage Contract that the groups of
// Run leave open: repeats inside one batch, empty batches, Leases that
// lapsed but were not yet expired, a cancel request that outlives a retry,
// and Tags whose two kinds spell the same text. Run calls it.
func runEdges(t *testing.T, newStore func(t *testing.T) Harness) {
	t.Helper()
	t.Run("Edges", func(t *testing.T) { testEdges(t, &suite{newStore: newStore}) })
}

func testEdges(t *testing.T, s *suite) {
	// Package store, Batches: "Rows in a batch are independent". The same
	// Lease twice in one OutcomeReport applies once: the first row applies,
	// the second finds the job no longer Running, as it would one call
	// later. The Transition Log gets one entry.
	s.run(t, "ReportSameLeaseTwiceInOneBatch", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		res := e.report(w1, succeeded(j), succeeded(j))
		if !res[0].Applied || res[1].Applied {
			t.Fatalf("same Lease twice in one batch: applied %v, %v; want true, false", res[0].Applied, res[1].Applied)
		}
		e.wantState(j.ID, job.StateSucceeded)
		{
			log, err := e.s.JobTransitions(e.ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(log) != 3 {
				t.Fatalf("Transition Log has %d entries, want 3 (insert, claim, one outcome)", len(log))
			}
		}
	})

	// The first of two outcomes for one Lease in a batch is the one that
	// applies, whichever it is.
	s.run(t, "ReportFirstOfTwoOutcomesApplies", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		res := e.report(w1, failed(j, time.Hour), succeeded(j))
		if !res[0].Applied || res[1].Applied {
			t.Fatalf("applied %v, %v; want the first only", res[0].Applied, res[1].Applied)
		}
		if got := e.wantState(j.ID, job.StateScheduled); got.RetryCause != job.RetryCauseHandlerFailed {
			t.Fatalf("Retry Cause = %q, want handler_failed from the first outcome", got.RetryCause)
		}
	})

	// A stale row before a live one for the same job does not shadow it.
	s.run(t, "ReportStaleThenLiveForOneJob", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		old := j
		old.Attempt--
		res := e.report(w1, succeeded(old), succeeded(j))
		if res[0].Applied || !res[1].Applied {
			t.Fatalf("applied %v, %v; want false, true", res[0].Applied, res[1].Applied)
		}
	})

	// Renewing one Lease twice in a batch answers both rows.
	s.run(t, "RenewSameLeaseTwice", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		for i, r := range e.renew(w1, lease, j.Lease(), j.Lease()) {
			if r.Status != store.RenewRenewed {
				t.Fatalf("row %d: %s, want renewed", i, r.Status)
			}
		}
	})

	// Relinquishing one Lease twice in a batch hands it back once.
	s.run(t, "RelinquishSameLeaseTwice", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		got := e.relinquish(w1, j.Lease(), j.Lease())
		if !slices.Equal(got, []job.Lease{j.Lease()}) {
			t.Fatalf("Relinquished = %v, want [%s] once", got, j.Lease())
		}
		if n := e.running("q"); n != 0 {
			t.Fatalf("Running = %d after Relinquish, want 0", n)
		}
	})

	// Empty batches write nothing and are no error.
	s.run(t, "EmptyBatches", func(t *testing.T, e *env) {
		if res := e.report(w1); len(res) != 0 {
			t.Fatalf("OutcomeReport(empty) = %v", res)
		}
		if res := e.renew(w1, lease); len(res) != 0 {
			t.Fatalf("LeaseRenew(empty) = %v", res)
		}
		if got := e.relinquish(w1); len(got) != 0 {
			t.Fatalf("LeaseRelinquish(empty) = %v", got)
		}
	})

	// ExpireParams: "Queues to sweep; empty means none (a sweep is always
	// scoped)".
	s.run(t, "ExpireWithoutQueuesEndsNothing", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		if got := e.expire(0); len(got) != 0 {
			t.Fatalf("LeaseExpire without Queues ended %v", got)
		}
		e.wantState(j.ID, job.StateRunning)
	})

	// The fence is (worker, Attempt, Running), not the Lease's expiry time:
	// a Lease that lapsed but that no LeaseExpire has ended yet is still
	// held, so its worker's renewal and outcome apply (LeaseExpire is what
	// ends a Lease; an outcome arriving first wins the race).
	s.run(t, "LapsedLeaseHeldUntilExpired", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 2)
		jobs := e.claim(w1, 2, "q")
		e.advance(lease + time.Second)
		e.renewStatus(w1, jobs[0].Lease(), store.RenewRenewed)
		e.reportApplied(w1, succeeded(jobs[1]))
		if got := e.expire(0, "q"); len(got) != 0 {
			t.Fatalf("LeaseExpire ended %v, a renewed and a finished Lease", got)
		}
	})

	// Glossary, Tag: the two kinds are "distinguished structurally rather
	// than by parsing: a colon in a Label is ordinary data". A Label and a
	// Keyed Tag that render alike are two Tags.
	s.run(t, "LabelAndKeyedTagKeptApart", func(t *testing.T, e *env) {
		tags := []job.Tag{job.Label("tenant:acme"), job.Label("tenant=acme"), job.Keyed("tenant", "acme")}
		nj := newJob("q")
		nj.Tags = tags
		id := e.insert(nj)[0]
		if got := e.get(id).Tags; !slices.Equal(got, job.NormalizeTags(tags)) {
			t.Fatalf("Tags = %#v, want the three distinct Tags %#v", got, job.NormalizeTags(tags))
		}
		j := e.claimOne(w1, "q")
		o := succeeded(j)
		o.TagDelta = []job.Tag{job.Keyed("tenant", "acme"), job.Keyed("tenant:acme", "x"), job.Label("tenant")}
		e.reportApplied(w1, o)
		want := job.MergeTags(tags, o.TagDelta)
		if got := e.get(id).Tags; !slices.Equal(got, want) {
			t.Fatalf("Tags after the delta = %#v, want %#v", got, want)
		}
	})
}
