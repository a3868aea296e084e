package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testBacklog(t *testing.T, s *suite) {
	// Backlog.QueueBacklog splits Scheduled into ready (due at the store's
	// now) and later, counts Retrying among them, names the oldest ready
	// due time, and follows claims and the clock.
	s.run(t, "ReadyApartFromLater", func(t *testing.T, e *env) {
		now := e.now().Truncate(time.Millisecond)
		e.insert(at("a", now.Add(-time.Hour)), at("a", now.Add(-time.Minute)), at("a", now.Add(time.Hour)),
			at("b", now.Add(2*time.Hour)))
		e.wantBacklog([]store.QueueBacklog{
			{Queue: "a", Ready: 2, Later: 1, OldestReady: now.Add(-time.Hour)},
			{Queue: "b", Later: 1},
		})
		j := e.claimOne(w1, "a")
		e.reportApplied(w1, failed(j, 30*time.Minute))
		e.wantBacklog([]store.QueueBacklog{
			{Queue: "a", Ready: 1, Later: 2, Retrying: 1, OldestReady: now.Add(-time.Minute)},
			{Queue: "b", Later: 1},
		})
		e.claimOne(w1, "a")
		e.wantBacklog([]store.QueueBacklog{
			{Queue: "a", Later: 2, Retrying: 1},
			{Queue: "b", Later: 1},
		})
		if e.h.Advance == nil {
			return
		}
		e.advance(90 * time.Minute)
		got := e.backlog()
		if len(got) != 2 || got[0].Ready != 2 || got[0].Later != 0 || got[0].Retrying != 1 ||
			!got[0].OldestReady.Before(now.Add(time.Hour+time.Second)) || got[1] != (store.QueueBacklog{Queue: "b", Later: 1}) {
			t.Fatalf("QueueBacklog after 90m = %+v", got)
		}
	})

	// Each count stops at the cap: the smaller half under it gives both
	// exactly; at least the cap on both sides makes Ready the cap with
	// ReadyAtLeast; Retrying stops at the cap with RetryingAtLeast; a cap
	// out of range is refused.
	s.run(t, "CountCap", func(t *testing.T, e *env) {
		now := e.now().Truncate(time.Millisecond)
		var jobs []store.NewJob
		for i := range 5 { // a: 5 ready, 1 later
			jobs = append(jobs, at("a", now.Add(-time.Duration(i+1)*time.Minute)))
		}
		jobs = append(jobs, at("a", now.Add(time.Hour)))
		for i := range 4 { // b: 4 ready, 4 later
			jobs = append(jobs, at("b", now.Add(-time.Duration(i+1)*time.Minute)), at("b", now.Add(time.Duration(i+1)*time.Hour)))
		}
		jobs = append(jobs, at("c", now.Add(-time.Minute)), at("c", now.Add(time.Hour))) // c: 1 and 1
		e.insert(jobs...)
		got, err := e.s.QueueBacklog(e.ctx, store.BacklogParams{CountCap: 3})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.QueueBacklog{
			{Queue: "a", Ready: 5, Later: 1, OldestReady: now.Add(-5 * time.Minute)},
			{Queue: "b", Ready: 3, Later: 5, OldestReady: now.Add(-4 * time.Minute), ReadyAtLeast: true},
			{Queue: "c", Ready: 1, Later: 1, OldestReady: now.Add(-time.Minute)},
		}
		if !slices.EqualFunc(got, want, backlogEqual) {
			t.Fatalf("QueueBacklog(cap 3) = %+v, want %+v", got, want)
		}
		for range 3 { // three Retrying in b
			e.reportApplied(w1, failed(e.claimOne(w1, "b"), 30*time.Minute))
		}
		got, err = e.s.QueueBacklog(e.ctx, store.BacklogParams{CountCap: 3})
		if err != nil {
			t.Fatal(err)
		}
		if b := got[1]; b.Queue != "b" || b.Retrying != 3 || !b.RetryingAtLeast || b.Ready != 1 || b.Later != 7 || b.ReadyAtLeast {
			t.Fatalf("QueueBacklog(cap 3) b after three failures = %+v, want 1 ready, 7 later, Retrying 3 at least", b)
		}
		for _, bad := range []int{-1, store.MaxBacklogCountCap + 1} {
			if _, err := e.s.QueueBacklog(e.ctx, store.BacklogParams{CountCap: bad}); !errors.Is(err, store.ErrInvalidParams) {
				t.Fatalf("QueueBacklog(cap %d) = %v, want ErrInvalidParams", bad, err)
			}
		}
	})

	// A Queue without Scheduled jobs is absent, and an empty store answers
	// an empty list.
	s.run(t, "EmptyQueuesAbsent", func(t *testing.T, e *env) {
		e.wantBacklog([]store.QueueBacklog{})
		e.insert(newJob("a"))
		e.reportApplied(w1, succeeded(e.claimOne(w1, "a")))
		e.wantBacklog([]store.QueueBacklog{})
	})

	// Backlog.Throughput counts settled jobs per minute and state from
	// p.Since, and refuses a missing Since.
	s.run(t, "Throughput", func(t *testing.T, e *env) {
		e.insert(newJob("a"), newJob("a"), withMax("a", 1))
		since := e.now().Add(-time.Minute)
		e.reportApplied(w1, succeeded(e.claimOne(w1, "a")))
		e.reportApplied(w1, succeeded(e.claimOne(w1, "a")))
		e.reportApplied(w1, failed(e.claimOne(w1, "a"), 0))
		got, err := e.s.Throughput(e.ctx, store.ThroughputParams{Since: since})
		if err != nil {
			t.Fatal(err)
		}
		var counts []int
		var states []job.State
		for _, b := range got {
			if b.Minute.Second() != 0 || b.Minute.Nanosecond() != 0 || b.Minute.Location() != time.UTC {
				t.Fatalf("bucket minute %v is not a UTC minute", b.Minute)
			}
			counts, states = append(counts, b.Count), append(states, b.State)
		}
		sum := map[job.State]int{}
		for i, st := range states {
			sum[st] += counts[i]
		}
		if len(sum) != 2 || sum[job.StateSucceeded] != 2 || sum[job.StateDeadLettered] != 1 {
			t.Fatalf("Throughput = %+v", got)
		}
		if !slices.IsSortedFunc(got, store.CompareThroughput) {
			t.Fatalf("Throughput not ordered: %+v", got)
		}
		later, err := e.s.Throughput(e.ctx, store.ThroughputParams{Since: e.now().Add(time.Hour)})
		if err != nil || len(later) != 0 {
			t.Fatalf("Throughput from a later Since = %+v, %v", later, err)
		}
		_, err = e.s.Throughput(e.ctx, store.ThroughputParams{})
		e.wantErr("Throughput without Since", err, store.ErrInvalidParams)
	})
}

func (e *env) backlog() []store.QueueBacklog {
	e.t.Helper()
	got, err := e.s.QueueBacklog(e.ctx, store.BacklogParams{})
	if err != nil {
		e.t.Fatalf("QueueBacklog: %v", err)
	}
	return got
}

func (e *env) wantBacklog(want []store.QueueBacklog) {
	e.t.Helper()
	got := e.backlog()
	if !slices.EqualFunc(got, want, backlogEqual) {
		e.t.Fatalf("QueueBacklog = %+v, want %+v", got, want)
	}
}

func backlogEqual(a, b store.QueueBacklog) bool {
	return a.Queue == b.Queue && a.Ready == b.Ready && a.Later == b.Later && a.Retrying == b.Retrying &&
		a.OldestReady.Equal(b.OldestReady) && a.ReadyAtLeast == b.ReadyAtLeast && a.RetryingAtLeast == b.RetryingAtLeast
}
