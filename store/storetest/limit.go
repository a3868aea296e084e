package storetest

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testLimit(t *testing.T, s *suite) {
	// JobClaim: "A Queue with a Concurrency Limit yields only as many jobs
	// as leave its Running count at or below the limit, counted across every
	// worker"; glossary, Concurrency Limit: "enforced at claim time".
	s.run(t, "Respected", func(t *testing.T, e *env) {
		e.setLimit("q", 2)
		e.insertN("q", 5)
		if got := e.claim(w1, 10, "q"); len(got) != 2 {
			t.Fatalf("claim under limit 2 leased %d jobs", len(got))
		}
		e.claimNone(w2, "q")
		if got := e.running("q"); got != 2 {
			t.Fatalf("Running = %d, want 2", got)
		}
	})

	// The limit counts the Running jobs other workers already hold.
	s.run(t, "CountsEarlierClaims", func(t *testing.T, e *env) {
		e.insertN("q", 5)
		e.claim(w1, 2, "q")
		e.setLimit("q", 3)
		if got := e.claim(w2, 10, "q"); len(got) != 1 {
			t.Fatalf("claim with 2 Running under limit 3 leased %d jobs, want 1", len(got))
		}
	})

	// A limited Queue yields its share and the claim falls through to the
	// next Queue for the rest of the batch.
	s.run(t, "FallsThroughWhenSaturated", func(t *testing.T, e *env) {
		e.setLimit("a", 1)
		e.insertN("a", 3)
		b := e.insertN("b", 2)
		got := e.claim(w1, 10, "a", "b")
		if len(got) != 3 {
			t.Fatalf("claimed %d jobs over [a(limit 1) b], want 3", len(got))
		}
		var fromB []job.ID
		for _, j := range got {
			if j.Queue == "b" {
				fromB = append(fromB, j.ID)
			}
		}
		e.wantIDs("jobs from b", sorted(fromB), b)
	})

	// Glossary, Concurrency Limit: "one shared counter across the whole
	// cluster for a Queue"; the package doc, Atomicity: a claim "takes a
	// Concurrency-Limit slot in one step". Many claimers race on one
	// limited Queue; Running never exceeds the limit.
	s.run(t, "ConcurrentClaimers", func(t *testing.T, e *env) {
		const limit, jobs, claimers = 3, 60, 12
		e.setLimit("q", limit)
		e.insertN("q", jobs)
		claimParams := func(w job.WorkerID) store.ClaimParams {
			return store.ClaimParams{Worker: w, Queues: []string{"q"}, Limit: 2, LeaseDuration: time.Hour}
		}
		worker := func(i int) job.WorkerID { return job.WorkerID(fmt.Sprintf("storetest-claimer-%d", i)) }

		// Phase 1: everyone claims at once and nobody lets go. Exactly
		// limit jobs are leased.
		var (
			mu    sync.Mutex
			held  = map[job.WorkerID][]job.Job{}
			wg    sync.WaitGroup
			start = make(chan struct{})
		)
		for i := range claimers {
			wg.Go(func() {
				<-start
				got, err := e.s.JobClaim(e.ctx, claimParams(worker(i)))
				if err != nil {
					t.Errorf("JobClaim: %v", err)
					return
				}
				mu.Lock()
				held[worker(i)] = got
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		total := 0
		for _, js := range held {
			total += len(js)
		}
		if total != limit {
			t.Fatalf("%d racing claimers leased %d jobs under limit %d", claimers, total, limit)
		}
		if got := e.running("q"); got != limit {
			t.Fatalf("Running = %d, want %d", got, limit)
		}
		done := int64(0)
		for w, js := range held {
			for _, j := range js {
				e.reportApplied(w, succeeded(j))
				done++
			}
		}

		// Phase 2: claim, check, finish, repeat until every job is done.
		// inHand counts leases the claimers hold: it rises only after a
		// claim returned and falls before the outcome is sent, so it never
		// exceeds the store's Running count, and inHand > limit proves the
		// store broke the limit.
		var inHand, finished atomic.Int64
		finished.Store(done)
		for i := range claimers {
			w := worker(i)
			wg.Go(func() {
				for spins := 0; finished.Load() < jobs; spins++ {
					if spins > 1_000_000 {
						t.Errorf("%s made no progress: the limited Queue seems stuck", w)
						return
					}
					got, err := e.s.JobClaim(e.ctx, claimParams(w))
					if err != nil {
						t.Errorf("JobClaim: %v", err)
						return
					}
					if n := inHand.Add(int64(len(got))); n > limit {
						t.Errorf("%d leases in hand under limit %d", n, limit)
					}
					qs, err := e.s.QueueList(e.ctx)
					if err != nil {
						t.Errorf("QueueList: %v", err)
						return
					}
					for _, q := range qs {
						if q.Name == "q" && q.Running > limit {
							t.Errorf("QueueList Running = %d under limit %d", q.Running, limit)
						}
					}
					if len(got) == 0 {
						runtime.Gosched()
						continue
					}
					outcomes := make([]store.Outcome, len(got))
					for k, j := range got {
						outcomes[k] = succeeded(j)
					}
					inHand.Add(-int64(len(got)))
					res, err := e.s.OutcomeReport(e.ctx, store.ReportParams{Worker: w, Outcomes: outcomes})
					if err != nil {
						t.Errorf("OutcomeReport: %v", err)
						return
					}
					for _, r := range res {
						if !r.Applied {
							t.Errorf("outcome for %s held by %s was not applied", r.Lease, w)
						}
					}
					finished.Add(int64(len(got)))
				}
			})
		}
		wg.Wait()
		counts, err := e.s.JobCountByState(e.ctx, store.CountParams{Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		if counts[job.StateSucceeded] != jobs {
			t.Fatalf("JobCountByState = %v, want %d succeeded", counts, jobs)
		}
	})
}
