package memstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// SubscribeHints: a hint per distinct Queue whose jobs became claimable at
// once, in name order, synchronously; none for jobs not yet due, for a
// paused Queue or a saturated one; none after unsubscribing.
func TestHints(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := vtime.NewManual(start)
	s := memstore.New(memstore.Options{Clock: clock})
	var got []string
	unsubscribe := s.SubscribeHints(func(q string) {
		got = append(got, q)
		// A subscriber may call the store: hints go out without its lock.
		if _, err := s.QueueList(ctx); err != nil {
			t.Error(err)
		}
	})
	expect := func(what string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: hints %q, want %q", what, got, want)
		}
		got = nil
	}

	later := newJob("later")
	later.ScheduledAt = start.Add(time.Hour)
	mustInsert(t, s, newJob("b"), newJob("a"), newJob("b"), later)
	expect("insert", "a", "b")

	mustClaim(t, s, "w1", 10, "a", "b")
	expect("claim")

	_ = s.QueuePause(ctx, store.QueueParams{Queue: "p"})
	mustInsert(t, s, newJob("p"))
	expect("insert into a paused Queue")
	_ = s.QueueResume(ctx, store.QueueParams{Queue: "p"})
	expect("resume", "p")

	_ = s.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: "l", Limit: 1})
	mustInsert(t, s, newJob("l"))
	expect("insert into a Queue under its limit", "l")
	l := mustClaim(t, s, "w1", 1, "l")[0]
	mustInsert(t, s, newJob("l"))
	expect("insert into a saturated Queue")
	mustReport(t, s, "w1", outcome(l, core.ResultSucceeded))
	expect("slot freed", "l")

	j := mustClaim(t, s, "w1", 1, "a")
	if len(j) != 0 {
		t.Fatal("job a was claimable twice")
	}
	x := mustInsert(t, s, newJob("x"))
	expect("insert", "x")
	xj := mustClaim(t, s, "w1", 1, "x")[0]
	if _, err := s.LeaseRelinquish(ctx, store.RelinquishParams{Worker: "w1", Leases: []job.Lease{xj.Lease()}}); err != nil {
		t.Fatal(err)
	}
	expect("Relinquish", "x")
	xj = mustClaim(t, s, "w1", 1, "x")[0]
	clock.Advance(lease)
	if _, err := s.LeaseExpire(ctx, store.ExpireParams{Queues: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	expect("expiry", "x")
	xj = mustClaim(t, s, "w1", 1, "x")[0]
	if xj.ID != x[0] || xj.Attempt != 3 {
		t.Fatalf("claimed %s, want %d@3", xj.Lease(), x[0])
	}
	mustReport(t, s, "w1", outcome(xj, core.ResultFailed)) // at its ceiling: dead-lettered
	expect("dead-letter")

	clock.Advance(time.Hour)
	expect("time passing (hints come from calls, not the clock)")

	unsubscribe()
	unsubscribe()
	mustInsert(t, s, newJob("a"))
	expect("after unsubscribe")
}
