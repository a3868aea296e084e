package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testClaim(t *testing.T, s *suite) {
	// JobClaim: "returns them with their Attempt already charged
	// (Attempt+1 durably, before any handler runs) and their Lease running
	// until the store's now + LeaseDuration". Glossary, Attempt and Lease.
	s.run(t, "ChargesAttemptAndLeases", func(t *testing.T, e *env) {
		id := e.insertN("q", 1)[0]
		before := e.now()
		got := e.claimOne(w1, "q")
		after := e.now()
		if got.ID != id || got.State != job.StateRunning || got.Attempt != 1 || got.Worker != w1 {
			t.Fatalf("claimed job %d: state %s, Attempt %d, Worker %q; want %d running at Attempt 1 under %q",
				got.ID, got.State, got.Attempt, got.Worker, id, w1)
		}
		e.within("returned LeaseExpiresAt", got.LeaseExpiresAt, before.Add(lease), after.Add(lease))
		// Durably: a read sees the charge and the Lease.
		stored := e.wantState(id, job.StateRunning)
		if stored.Attempt != 1 || stored.Worker != w1 {
			t.Fatalf("stored job: Attempt %d, Worker %q; want 1, %q", stored.Attempt, stored.Worker, w1)
		}
		e.within("stored LeaseExpiresAt", stored.LeaseExpiresAt, before.Add(lease), after.Add(lease))
	})

	// JobClaim: "in due-time order, ties by id"; glossary, Queue: "claimed in
	// due-time order".
	s.run(t, "DueOrder", func(t *testing.T, e *env) {
		base := e.now().Truncate(time.Second)
		ids := e.insert(
			at("q", base.Add(-2*time.Second)),
			at("q", base.Add(-3*time.Second)),
			at("q", base.Add(-1*time.Second)),
			at("q", base.Add(-3*time.Second)),
		)
		want := []job.ID{ids[1], ids[3], ids[0], ids[2]}
		if ids[3] < ids[1] {
			want[0], want[1] = ids[3], ids[1]
		}
		var got []job.ID
		for range want {
			got = append(got, e.claimOne(w1, "q").ID)
		}
		e.wantIDs("claim order", got, want)
	})

	// JobClaim leases only due jobs: glossary, Queue; job.Job.ScheduledAt: "a
	// Scheduled job is claimable once the store's clock reaches it".
	s.run(t, "NotYetDueExcluded", func(t *testing.T, e *env) {
		base := e.now().Truncate(time.Second)
		ids := e.insert(at("q", base.Add(time.Hour)), at("q", base.Add(-time.Second)))
		jobs := e.claim(w1, 10, "q")
		e.wantIDs("claimed", idsOf(jobs), []job.ID{ids[1]})
		e.wantState(ids[0], job.StateScheduled)
	})

	// job.Job.ScheduledAt: claimable "once the store's clock reaches it".
	s.run(t, "DueWhenClockReaches", func(t *testing.T, e *env) {
		e.needAdvance()
		id := e.insert(at("q", e.now().Add(time.Hour)))[0]
		e.advance(time.Hour - time.Second)
		e.claimNone(w1, "q")
		e.advance(time.Second)
		if got := e.claimOne(w1, "q"); got.ID != id {
			t.Fatalf("claimed %d, want %d", got.ID, id)
		}
	})

	// JobClaim: "every due job of Queues[0] ... before any of Queues[1]" — the
	// Strict Dispatch Policy's order, whatever the due times across Queues.
	s.run(t, "QueueOrder", func(t *testing.T, e *env) {
		base := e.now().Truncate(time.Second)
		b := e.insert(at("b", base.Add(-time.Hour)), at("b", base.Add(-time.Hour)))
		a := e.insert(at("a", base.Add(-time.Second)), at("a", base.Add(-time.Second)))
		var got []job.ID
		for range 4 {
			got = append(got, e.claimOne(w1, "a", "b").ID)
		}
		e.wantIDs("claim order over [a b]", got, []job.ID{a[0], a[1], b[0], b[1]})
	})

	// JobClaim: a Weighted policy "passes its allocated Queue first and the
	// rest as fallthrough": a batch takes what the first Queue has, then
	// falls through in order.
	s.run(t, "QueueFallthrough", func(t *testing.T, e *env) {
		base := e.now().Truncate(time.Second)
		c := e.insert(at("c", base.Add(-3*time.Second)))
		b := e.insert(at("b", base.Add(-2*time.Second)), at("b", base.Add(-3*time.Second)), at("b", base.Add(-1*time.Second)))
		a := e.insert(at("a", base))
		jobs := e.claim(w1, 3, "a", "b", "c")
		e.wantIDs("claimed over [a b c]", sorted(idsOf(jobs)), sorted([]job.ID{a[0], b[0], b[1]}))
		e.wantState(b[2], job.StateScheduled)
		e.wantState(c[0], job.StateScheduled)
	})

	// JobClaim takes only the Queues it is given.
	s.run(t, "OnlyGivenQueues", func(t *testing.T, e *env) {
		other := e.insertN("other", 1)[0]
		e.claimNone(w1, "q")
		e.wantState(other, job.StateScheduled)
	})

	// JobClaim: "Paused Queues are skipped"; QueuePause "stops claims from
	// the Queue", QueueResume "lets claims from the Queue start again".
	s.run(t, "PausedSkipped", func(t *testing.T, e *env) {
		a := e.insertN("a", 2)
		b := e.insertN("b", 1)
		if err := e.s.QueuePause(e.ctx, store.QueueParams{Queue: "a"}); err != nil {
			t.Fatal(err)
		}
		e.wantIDs("claimed with a paused", idsOf(e.claim(w1, 10, "a", "b")), b)
		e.claimNone(w1, "a")
		if err := e.s.QueueResume(e.ctx, store.QueueParams{Queue: "a"}); err != nil {
			t.Fatal(err)
		}
		e.wantIDs("claimed after resume", sorted(idsOf(e.claim(w1, 10, "a", "b"))), a)
	})

	// ClaimParams.Limit: "the most jobs to lease".
	s.run(t, "LimitBoundsBatch", func(t *testing.T, e *env) {
		e.insertN("q", 5)
		if got := e.claim(w1, 2, "q"); len(got) != 2 {
			t.Fatalf("claim with Limit 2 leased %d jobs", len(got))
		}
		if got := e.claim(w2, 10, "q"); len(got) != 3 {
			t.Fatalf("second claim leased %d jobs, want the 3 left", len(got))
		}
	})

	// JobClaim: "Concurrent claimers never lease one job twice" — and a
	// leased job is not claimable again until its Lease ends.
	s.run(t, "LeasedJobNotClaimedAgain", func(t *testing.T, e *env) {
		e.insertN("q", 3)
		e.claim(w1, 10, "q")
		e.claimNone(w2, "q")
		e.claimNone(w1, "q")
	})

	// JobClaim: "Concurrent claimers never lease one job twice"; storage
	// package doc, Atomicity. Many goroutines race; every job is leased
	// exactly once.
	s.run(t, "ConcurrentClaimersLeaseEachJobOnce", func(t *testing.T, e *env) {
		const jobs, claimers = 200, 16
		inserted := e.insertN("q", jobs)
		var (
			mu    sync.Mutex
			count = map[job.ID]int{}
			wg    sync.WaitGroup
			start = make(chan struct{})
		)
		for w := range claimers {
			worker := job.WorkerID(fmt.Sprintf("storetest-claimer-%d", w))
			wg.Go(func() {
				<-start
				for {
					got, err := e.s.JobClaim(e.ctx, store.ClaimParams{Worker: worker, Queues: []string{"q"}, Limit: 3, LeaseDuration: time.Hour})
					if err != nil {
						t.Errorf("JobClaim by %s: %v", worker, err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, j := range got {
						count[j.ID]++
						if j.Attempt != 1 || j.Worker != worker {
							t.Errorf("job %d leased at Attempt %d to %q, want Attempt 1 to %q", j.ID, j.Attempt, j.Worker, worker)
						}
					}
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		// Whatever a racing claimer skipped is still claimable now.
		for _, j := range e.claim(w1, jobs, "q") {
			count[j.ID]++
		}
		for _, id := range inserted {
			if count[id] != 1 {
				t.Errorf("job %d was leased %d times, want exactly once", id, count[id])
			}
		}
		if len(count) != jobs {
			t.Errorf("%d distinct jobs leased, want %d", len(count), jobs)
		}
		if got := e.running("q"); got != jobs {
			t.Errorf("QueueList Running = %d, want %d", got, jobs)
		}
	})

	// JobClaim: "Concurrent claimers never lease one job twice" — nor does
	// one claim that names a Queue twice.
	s.run(t, "QueueNamedTwice", func(t *testing.T, e *env) {
		a := e.insertN("a", 2)
		b := e.insertN("b", 1)
		got := e.claim(w1, 10, "a", "b", "a")
		e.wantIDs("claimed", sorted(idsOf(got)), append(a, b...))
	})
}
