package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testGraph drives whole Dependency graphs through the store and compares
// the end with a twin written from the core rules alone.
func testGraph(t *testing.T, s *suite) {
	// Random graphs: every job ends as the twin says, none is left Awaiting
	// Parent (glossary, Awaiting Parent: "orphans are a Core bug"), every
	// edge is counted, and each dependent leaves Awaiting Parent once.
	for seed := range uint64(4) {
		s.run(t, fmt.Sprintf("RandomGraphsAgreeWithCore/seed=%d", seed), func(t *testing.T, e *env) {
			randomGraph(t, e, seed)
		})
	}

	// A fan-out/fan-in graph drains in batches: every job succeeds once,
	// and the sink is released only by the last of its parents.
	s.run(t, "FanOutFanIn", func(t *testing.T, e *env) {
		st, err := FanOutFanIn(e.ctx, e.s, 300, 64)
		if err != nil {
			t.Fatal(err)
		}
		if st.Jobs != 302 {
			t.Fatalf("drained %d jobs, want 302", st.Jobs)
		}
	})
}

// plan is what one job of a random graph does when it runs.
type plan struct {
	result core.Result // of its last Attempt
	flaky  bool        // its first Attempt fails and retries
}

func randomGraph(t *testing.T, e *env, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b9))
	const queue = "g"
	results := []core.Result{core.ResultSucceeded, core.ResultSucceeded, core.ResultSucceeded,
		core.ResultFailedPermanently, core.ResultUnroutable, core.ResultFailed}
	plans := map[job.ID]plan{}
	newPlan := func() (store.NewJob, plan) {
		nj := newJob(queue)
		p := plan{result: results[rng.IntN(len(results))], flaky: rng.IntN(5) == 0}
		if p.result == core.ResultFailed {
			nj.MaxAttempts = 1 // dead-letters at the ceiling
			p.flaky = false
		}
		if p.flaky {
			nj.MaxAttempts = 3
		}
		return nj, p
	}
	// Older jobs: some finished before the graph is inserted, the rest
	// still live when their dependents arrive.
	var old []job.ID
	for range 8 {
		nj, p := newPlan()
		id := e.insert(nj)[0]
		plans[id] = p
		old = append(old, id)
	}
	drain(t, e, queue, plans, 4) // finishes about half of them

	n := 40 + rng.IntN(20)
	jobs := make([]store.NewJob, n)
	batchPlans := make([]plan, n)
	for i := range jobs {
		jobs[i], batchPlans[i] = newPlan()
		mode := onSuccess
		if rng.IntN(3) == 0 {
			mode = onAny
		}
		var parents []store.ParentRef
		for range rng.IntN(4) {
			switch k := rng.IntN(10); {
			case k < 2:
				parents = append(parents, store.Existing(old[rng.IntN(len(old))]))
			case i > 0:
				// Mostly earlier jobs, sometimes a later one: a forward
				// reference the store must order (no cycles: later jobs
				// only point at earlier ones below, except these).
				parents = append(parents, store.InBatch(rng.IntN(i)))
			}
		}
		jobs[i].Dependency = store.Dependency{Mode: mode, Parents: parents}
	}
	// Reverse the batch so most in-batch parents are forward references.
	for l, r := 0, n-1; l < r; l, r = l+1, r-1 {
		jobs[l], jobs[r] = jobs[r], jobs[l]
		batchPlans[l], batchPlans[r] = batchPlans[r], batchPlans[l]
	}
	for i := range jobs {
		for k, ref := range jobs[i].Dependency.Parents {
			if ref.ID == 0 {
				jobs[i].Dependency.Parents[k] = store.InBatch(n - 1 - ref.Index)
			}
		}
	}
	ids := e.insert(jobs...)
	for i, id := range ids {
		plans[id] = batchPlans[i]
	}

	// Operators cancel a few waiting or Scheduled jobs right away.
	cancelled := map[job.ID]bool{}
	for _, id := range ids {
		if rng.IntN(12) != 0 {
			continue
		}
		if st := e.get(id).State; st == job.StateAwaitingParent || st == job.StateScheduled {
			if err := e.cancel(id); err != nil {
				t.Fatalf("JobCancel(%d): %v", id, err)
			}
			cancelled[id] = true
		}
	}
	drain(t, e, queue, plans, 0)

	// The twin: in id order (every parent's id is below its dependent's),
	// a job ends as its plan says unless an operator cancelled it or an
	// on-success parent ended without succeeding.
	want := map[job.ID]job.Job{}
	all := sorted(append(append([]job.ID{}, old...), ids...))
	for _, id := range all {
		var w job.Job
		info := e.deps(id)
		failedBy := false
		for _, p := range info.Parents {
			if p.ID >= id {
				t.Fatalf("job %d has parent %d: a parent's id must be below its dependent's", id, p.ID)
			}
			failedBy = failedBy || core.ParentFails(info.Mode, want[p.ID].State)
		}
		switch {
		case cancelled[id]:
			w.State, w.CancelCause = job.StateCancelled, job.CancelCauseOperator
		case failedBy:
			w.State, w.CancelCause = job.StateCancelled, job.CancelCauseParentFailure
		default:
			w.State = outcomeState(plans[id].result)
		}
		want[id] = w
		got := e.get(id)
		if got.State != w.State || got.CancelCause != w.CancelCause {
			t.Fatalf("seed %d: job %d (parents %+v, mode %s, plan %+v) ended %s/%q, the twin says %s/%q",
				seed, id, info.Parents, info.Mode, plans[id], got.State, got.CancelCause, w.State, w.CancelCause)
		}
		for _, p := range info.Parents {
			if !p.Counted {
				t.Fatalf("seed %d: job %d's edge from terminal parent %d is not counted", seed, id, p.ID)
			}
		}
		if len(info.Parents) > 0 {
			log := e.transitions(id)
			left := 0
			for k := 1; k < len(log); k++ {
				if log[k-1].State == job.StateAwaitingParent {
					left++
				}
			}
			if left != 1 || log[0].State != job.StateAwaitingParent {
				t.Fatalf("seed %d: job %d left Awaiting Parent %d times (log %+v), want once", seed, id, left, log)
			}
		}
	}
}

// outcomeState is the terminal state of a job whose last Attempt's result
// is r, at its ceiling.
func outcomeState(r core.Result) job.State {
	switch r {
	case core.ResultSucceeded:
		return job.StateSucceeded
	case core.ResultUnroutable:
		return job.StateQuarantined
	default:
		return job.StateDeadLettered
	}
}

// drain claims from queue in batches of up to 7 and reports each job's
// planned outcome (a flaky job's first Attempt fails), until nothing is
// claimable or, if rounds > 0, for that many claims.
func drain(t *testing.T, e *env, queue string, plans map[job.ID]plan, rounds int) {
	t.Helper()
	for round := 0; rounds == 0 || round < rounds; round++ {
		jobs := e.claim(w1, 7, queue)
		if len(jobs) == 0 {
			return
		}
		outs := make([]store.Outcome, len(jobs))
		for i, j := range jobs {
			p, ok := plans[j.ID]
			if !ok {
				t.Fatalf("claimed job %d that no plan names", j.ID)
			}
			r := p.result
			if p.flaky && j.Attempt == 1 {
				r = core.ResultFailed
			}
			outs[i] = decide(j, r, 0)
		}
		for i, res := range e.report(w1, outs...) {
			if !res.Applied {
				t.Fatalf("outcome %d (%s) was not applied", i, res.Lease)
			}
		}
	}
}

// GraphStats reports a FanOutFanIn run.
type GraphStats struct {
	// Jobs is the number of jobs that succeeded.
	Jobs int
	// Claims and Reports count the store calls the drain made.
	Claims, Reports int
}

// FanOutFanIn inserts, in one JobInsertMany call, a root job, width jobs
// depending on the root and one sink depending on all width of them, then
// works the graph to the end as one worker would — claims of up to batch
// jobs, each batch's outcomes reported in one OutcomeReport — and checks
// that every job succeeded once and that the sink was released only by the
// last of its parents. It serves adapters' own scale tests: a 10,000-wide
// graph proves release stays set-based under a large fan-in.
func FanOutFanIn(ctx context.Context, s store.Store, width, batch int) (GraphStats, error) {
	const queue = "fan"
	jobs := make([]store.NewJob, 0, width+2)
	jobs = append(jobs, newJob(queue))
	sink := make([]store.ParentRef, width)
	for i := range width {
		jobs = append(jobs, child(queue, onSuccess, store.InBatch(0)))
		sink[i] = store.InBatch(1 + i)
	}
	jobs = append(jobs, child(queue, onSuccess, sink...))
	ids, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs})
	if err != nil {
		return GraphStats{}, fmt.Errorf("insert the graph: %w", err)
	}
	sinkID := ids[len(ids)-1]
	var st GraphStats
	seen := make(map[job.ID]bool, len(ids))
	for {
		claimed, err := s.JobClaim(ctx, store.ClaimParams{Worker: w1, Queues: []string{queue}, Limit: batch, LeaseDuration: lease})
		if err != nil {
			return st, fmt.Errorf("claim: %w", err)
		}
		st.Claims++
		if len(claimed) == 0 {
			break
		}
		outs := make([]store.Outcome, len(claimed))
		for i, j := range claimed {
			if seen[j.ID] {
				return st, fmt.Errorf("job %d was claimed twice", j.ID)
			}
			seen[j.ID] = true
			if j.ID == sinkID && len(seen) != len(ids) {
				return st, fmt.Errorf("the sink ran after %d of %d jobs", len(seen)-1, len(ids)-1)
			}
			outs[i] = succeeded(j)
		}
		res, err := s.OutcomeReport(ctx, store.ReportParams{Worker: w1, Outcomes: outs})
		if err != nil {
			return st, fmt.Errorf("report: %w", err)
		}
		st.Reports++
		for _, r := range res {
			if !r.Applied {
				return st, fmt.Errorf("outcome %s was not applied", r.Lease)
			}
		}
		st.Jobs += len(res)
	}
	counts, err := s.JobCountByState(ctx, store.CountParams{Queue: queue})
	if err != nil {
		return st, err
	}
	if counts[job.StateSucceeded] != len(ids) || len(counts) != 1 {
		return st, fmt.Errorf("after the drain the jobs are %v, want %d succeeded", counts, len(ids))
	}
	if st.Jobs != len(ids) {
		return st, errors.New("a job succeeded more than once")
	}
	return st, nil
}
