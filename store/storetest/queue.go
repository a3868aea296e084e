package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/backwave/backwave/store"
)

func testQueue(t *testing.T, s *suite) {
	// Queues: "A Queue exists once a job names it or a setting is written
	// for it"; QueueList: "every known Queue with its settings and counts,
	// ordered by name".
	s.run(t, "ListKnownQueuesByName", func(t *testing.T, e *env) {
		qs, err := e.s.QueueList(e.ctx)
		if err != nil || len(qs) != 0 {
			t.Fatalf("QueueList of a fresh store = %v, %v; want none", qs, err)
		}
		e.insertN("m", 1)
		if err := e.s.QueuePause(e.ctx, store.QueueParams{Queue: "z"}); err != nil {
			t.Fatal(err)
		}
		e.setLimit("b", 4)
		if err := e.s.QueueResume(e.ctx, store.QueueParams{Queue: "a"}); err != nil {
			t.Fatal(err)
		}
		qs, err = e.s.QueueList(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.QueueInfo{
			{Name: "a"},
			{Name: "b", Limit: 4},
			{Name: "m"},
			{Name: "z", Paused: true},
		}
		if !slices.Equal(qs, want) {
			t.Fatalf("QueueList = %+v, want %+v", qs, want)
		}
		if !slices.IsSortedFunc(qs, func(a, b store.QueueInfo) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatalf("QueueList is not ordered by name: %+v", qs)
		}
	})

	// QueuePause / QueueResume are reflected in QueueList; pausing twice is
	// harmless.
	s.run(t, "PauseResume", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		for range 2 {
			if err := e.s.QueuePause(e.ctx, store.QueueParams{Queue: "q"}); err != nil {
				t.Fatal(err)
			}
		}
		if q, _ := e.queueInfo("q"); !q.Paused {
			t.Fatal("QueueList does not show the Queue paused")
		}
		if err := e.s.QueueResume(e.ctx, store.QueueParams{Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		if q, _ := e.queueInfo("q"); q.Paused {
			t.Fatal("QueueList shows the resumed Queue paused")
		}
		e.claimOne(w1, "q")
	})

	// QueuePause: "running jobs are unaffected" — their Leases renew and
	// their outcomes apply.
	s.run(t, "PauseLeavesRunningJobs", func(t *testing.T, e *env) {
		e.insertN("q", 2)
		jobs := e.claim(w1, 2, "q")
		if err := e.s.QueuePause(e.ctx, store.QueueParams{Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		e.renewStatus(w1, jobs[0].Lease(), store.RenewRenewed)
		e.reportApplied(w1, succeeded(jobs[0]))
		if got := e.relinquish(w1, jobs[1].Lease()); len(got) != 1 {
			t.Fatalf("Relinquish in a paused Queue handed back %v", got)
		}
		e.claimNone(w1, "q")
	})

	// QueueSetLimit: "a Limit of 0 removes it".
	s.run(t, "SetAndRemoveLimit", func(t *testing.T, e *env) {
		e.insertN("q", 3)
		e.setLimit("q", 1)
		if q, _ := e.queueInfo("q"); q.Limit != 1 {
			t.Fatalf("Limit = %d, want 1", q.Limit)
		}
		e.claimOne(w1, "q")
		e.claimNone(w1, "q")
		e.setLimit("q", 0)
		if q, _ := e.queueInfo("q"); q.Limit != 0 {
			t.Fatalf("Limit = %d after removal, want 0", q.Limit)
		}
		if got := e.claim(w1, 10, "q"); len(got) != 2 {
			t.Fatalf("claimed %d after the limit was removed, want 2", len(got))
		}
	})

	// QueueInfo.Running: "the number of Running jobs (the slots in use)",
	// per Queue.
	s.run(t, "RunningCounts", func(t *testing.T, e *env) {
		e.insertN("a", 3)
		e.insertN("b", 2)
		a := e.claim(w1, 2, "a")
		e.claim(w2, 1, "b")
		if ra, rb := e.running("a"), e.running("b"); ra != 2 || rb != 1 {
			t.Fatalf("Running = a:%d b:%d, want a:2 b:1", ra, rb)
		}
		e.reportApplied(w1, succeeded(a[0]))
		e.relinquish(w1, a[1].Lease())
		if ra := e.running("a"); ra != 0 {
			t.Fatalf("Running(a) = %d, want 0", ra)
		}
	})

	// QueueSetLimit: "A lowered limit never revokes a Lease; it stops
	// claims until Running drops below it."
	s.run(t, "LoweredLimitRevokesNothing", func(t *testing.T, e *env) {
		e.insertN("q", 4)
		e.setLimit("q", 3)
		jobs := e.claim(w1, 10, "q")
		if len(jobs) != 3 {
			t.Fatalf("claimed %d under limit 3", len(jobs))
		}
		e.setLimit("q", 1)
		for _, j := range jobs {
			e.renewStatus(w1, j.Lease(), store.RenewRenewed)
		}
		if got := e.running("q"); got != 3 {
			t.Fatalf("Running = %d after lowering the limit, want 3 (no Lease revoked)", got)
		}
		e.claimNone(w2, "q")
		e.reportApplied(w1, succeeded(jobs[0]))
		e.reportApplied(w1, succeeded(jobs[1]))
		e.claimNone(w2, "q") // Running 1: at the limit, not below it
		e.reportApplied(w1, succeeded(jobs[2]))
		e.claimOne(w2, "q")
	})
}
