package memstore_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// storeSnapshot is everything observable about a store.
type storeSnapshot struct {
	Jobs        []job.Job
	Transitions [][]store.Transition
	Outputs     [][]byte
	Queues      []store.QueueInfo
}

func snapshot(t *testing.T, s *memstore.Store) storeSnapshot {
	t.Helper()
	ctx := t.Context()
	var snap storeSnapshot
	jobs, err := s.JobList(ctx, store.JobListParams{Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	snap.Jobs = jobs
	for _, j := range jobs {
		log, err := s.JobTransitions(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.JobOutput(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		snap.Transitions = append(snap.Transitions, log)
		snap.Outputs = append(snap.Outputs, out)
	}
	if snap.Queues, err = s.QueueList(ctx); err != nil {
		t.Fatal(err)
	}
	return snap
}

// workload drives s through a seeded mix of every operation, moving clock,
// and returns a log of what each call answered. Everything it does is a
// function of the seed.
func workload(t *testing.T, s *memstore.Store, clock *vtime.Manual, seed uint64) []string {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 1))
	queues := []string{"a", "b", "c"}
	workers := []job.WorkerID{"w1", "w2", "w3"}
	held := map[job.WorkerID][]job.Job{}
	inserted := 0
	var out []string
	logf := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for step := range 400 {
		w := workers[rng.IntN(len(workers))]
		switch op := rng.IntN(9); op {
		case 0, 1:
			var jobs []store.NewJob
			for range 1 + rng.IntN(4) {
				nj := newJob(queues[rng.IntN(len(queues))])
				nj.MaxAttempts = 1 + rng.IntN(3)
				if rng.IntN(3) == 0 {
					nj.ScheduledAt = clock.Now().Add(time.Duration(rng.IntN(120)) * time.Second)
				}
				jobs = append(jobs, nj)
			}
			inserted += len(jobs)
			logf("insert %v", mustInsert(t, s, jobs...))
		case 2, 3:
			qs := slices.Clone(queues)
			rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
			got := mustClaim(t, s, w, 1+rng.IntN(3), qs[:1+rng.IntN(3)]...)
			held[w] = append(held[w], got...)
			logf("claim %s %v", w, got)
		case 4:
			if len(held[w]) == 0 {
				continue
			}
			i := rng.IntN(len(held[w]))
			j := held[w][i]
			held[w] = slices.Delete(held[w], i, i+1)
			// What a renewal would have told the worker.
			if cur, err := s.JobGet(ctx, j.ID); err == nil && cur.Worker == w && cur.Attempt == j.Attempt {
				j.CancelRequested = cur.CancelRequested
			}
			r := []core.Result{core.ResultSucceeded, core.ResultFailed, core.ResultFailedPermanently, core.ResultUnroutable, core.ResultSnoozed}[rng.IntN(5)]
			o := outcome(j, r)
			o.FailureDetail = fmt.Sprintf("step %d", step)
			logf("report %s %v", w, mustReport(t, s, w, o))
		case 5:
			res, err := s.LeaseRenew(ctx, store.RenewParams{Worker: w, Leases: leasesOf(held[w]), LeaseDuration: lease})
			if err != nil {
				t.Fatal(err)
			}
			logf("renew %s %v", w, res)
		case 6:
			res, err := s.LeaseExpire(ctx, store.ExpireParams{Queues: queues, Limit: rng.IntN(3)})
			if err != nil {
				t.Fatal(err)
			}
			logf("expire %v", res)
		case 7:
			res, err := s.LeaseRelinquish(ctx, store.RelinquishParams{Worker: w, Leases: leasesOf(held[w])})
			if err != nil {
				t.Fatal(err)
			}
			held[w] = nil
			logf("relinquish %s %v", w, res)
		case 8:
			switch {
			case len(held[w]) > 0 && rng.IntN(4) > 0:
				id := held[w][rng.IntN(len(held[w]))].ID // most likely still Running
				logf("cancel %d %v", id, s.RequestCancel(ctx, id))
			case inserted > 0:
				id := job.ID(1 + rng.IntN(inserted))
				logf("cancel %d %v", id, s.RequestCancel(ctx, id))
			}
			if rng.IntN(2) == 0 {
				err := s.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: queues[rng.IntN(3)], Limit: rng.IntN(3)})
				logf("limit %v", err)
			}
		}
		clock.Advance(time.Duration(rng.IntN(20)) * time.Second)
	}
	return out
}

func leasesOf(jobs []job.Job) []job.Lease {
	out := make([]job.Lease, len(jobs))
	for i := range jobs {
		out[i] = jobs[i].Lease()
	}
	return out
}

// Options.OnTransition: "called once for every state change"; the
// Simulator checks each edge against core.Edges. Over seeded workloads,
// every reported edge must be legal, the reports must match the Transition
// Logs one for one, and together the workloads reach every edge this store
// can take.
func TestOnTransitionSeesOnlyLegalEdges(t *testing.T) {
	t.Parallel()
	type seen struct {
		id      job.ID
		edge    core.Edge
		attempt job.Attempt
	}
	reached := map[core.Edge]bool{}
	for seed := range uint64(8) {
		var got []seen
		clock := vtime.NewManual(start)
		s := memstore.New(memstore.Options{Clock: clock, OnTransition: func(id job.ID, e core.Edge, a job.Attempt) {
			if !core.Legal(e) {
				t.Errorf("seed %d: job %d moved along illegal edge %s", seed, id, e)
			}
			got = append(got, seen{id, e, a})
		}})
		workload(t, s, clock, seed)

		perJob := map[job.ID][]seen{}
		for _, g := range got {
			reached[g.edge] = true
			perJob[g.id] = append(perJob[g.id], g)
		}
		for id, seq := range perJob {
			log, err := s.JobTransitions(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if len(log) != len(seq) {
				t.Fatalf("seed %d, job %d: observer saw %d transitions, log has %d", seed, id, len(seq), len(log))
			}
			for i, tr := range log {
				if tr.Edge() != seq[i].edge || tr.Attempt != seq[i].attempt {
					t.Fatalf("seed %d, job %d entry %d: log %s@%d, observer %s@%d", seed, id, i, tr.Edge(), tr.Attempt, seq[i].edge, seq[i].attempt)
				}
				if i > 0 && log[i-1].State != tr.From {
					t.Fatalf("seed %d, job %d entry %d starts from %s, previous entry ended in %s", seed, id, i, tr.From, log[i-1].State)
				}
			}
		}
	}
	// A missing edge means the workload (or the store) lost a path.
	for _, e := range core.Edges {
		switch {
		case e.Via == core.ViaRelease, e.Via == core.ViaParentFailure, e.Via == core.ViaRequeue,
			e.To == job.StateAwaitingParent, e.From == job.StateAwaitingParent:
			continue // Dependencies and requeue are not part of this store yet
		case e.Via == core.ViaWorkflowRetry:
			continue // this workload has no Workflows; the Simulator's reaches these edges
		}
		if !reached[e] {
			t.Errorf("the workloads never reached edge %s", e)
		}
	}
}

// The package doc, Determinism: "the same calls at the same virtual times
// give the same results, ids and Transition Logs on every run".
func TestDeterministic(t *testing.T) {
	t.Parallel()
	run := func() ([]string, storeSnapshot) {
		clock := vtime.NewManual(start)
		s := memstore.New(memstore.Options{Clock: clock})
		var hints []string
		s.SubscribeHints(func(q string) { hints = append(hints, q) })
		log := workload(t, s, clock, 42)
		return append(log, hints...), snapshot(t, s)
	}
	log1, snap1 := run()
	for range 3 {
		log2, snap2 := run()
		if !slices.Equal(log1, log2) {
			for i := range min(len(log1), len(log2)) {
				if log1[i] != log2[i] {
					t.Fatalf("runs diverge at call %d:\n%s\n%s", i, log1[i], log2[i])
				}
			}
			t.Fatalf("runs made %d and %d calls", len(log1), len(log2))
		}
		if !reflect.DeepEqual(snap1, snap2) {
			t.Fatal("two runs of one workload left different stores")
		}
	}
}
