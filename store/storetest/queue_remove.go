package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// removeQueue calls QueueRemove as the suite's actor.
func (e *env) removeQueue(queue string) error {
	return e.s.QueueRemove(e.ctx, store.QueueParams{Queue: queue, Actor: actor})
}

func testQueueRemove(t *testing.T, s *suite) {
	// QueueRemove: "every setting written for it goes ... and QueueList no
	// longer shows it", atomically with its audit record; "A job enqueued
	// to the name afterwards makes it known again, with no settings."
	s.run(t, "RemoveEmptyQueueAndItsSettings", func(t *testing.T, e *env) {
		if err := e.s.QueuePause(e.ctx, store.QueueParams{Queue: "s", Actor: actor}); err != nil {
			t.Fatal(err)
		}
		e.setLimit("s", 4)
		e.setRate("s", store.QueueRate{Limit: 10, Period: time.Minute})
		e.setKeyLimit("s", 2)
		e.setKeyRate("s", store.QueueRate{Limit: 5, Period: time.Minute})
		e.setFair("s", true)
		e.setLimit("other", 1)
		if err := e.removeQueue("s"); err != nil {
			t.Fatalf("QueueRemove of an empty Queue: %v", err)
		}
		if q, ok := e.queueInfo("s"); ok {
			t.Fatalf("QueueList still shows the removed Queue: %+v", q)
		}
		if q, ok := e.queueInfo("other"); !ok || q.Limit != 1 {
			t.Fatalf("QueueRemove touched another Queue: %+v, %v", q, ok)
		}
		got := e.audit(store.AuditListParams{Queue: "s", Limit: 1})
		if len(got) != 1 || got[0].Action != store.AuditQueueRemove || got[0].Actor != actor || got[0].Queue != "s" || got[0].JobID != 0 {
			t.Fatalf("newest audit entry of the Queue = %+v, want %s by %s", got, store.AuditQueueRemove, actor)
		}
		e.insertN("s", 1)
		if q, ok := e.queueInfo("s"); !ok || q != (store.QueueInfo{Name: "s"}) {
			t.Fatalf("the Queue known again by a job = %+v, %v; want it with no settings", q, ok)
		}
		e.claimOne(w1, "s") // no pause, no Rate window left over
	})

	// QueueRemove: "An unknown Queue is ErrNotFound"; a removed one is
	// unknown; an invalid name is ErrInvalidParams.
	s.run(t, "RemoveUnknownQueue", func(t *testing.T, e *env) {
		e.wantErr("QueueRemove(unknown)", e.removeQueue("nosuch"), store.ErrNotFound)
		e.setLimit("q", 1)
		if err := e.removeQueue("q"); err != nil {
			t.Fatal(err)
		}
		e.wantErr("QueueRemove(removed)", e.removeQueue("q"), store.ErrNotFound)
		e.wantErr("QueueRemove(invalid)", e.removeQueue(" q"), store.ErrInvalidParams)
		if got := e.audit(store.AuditListParams{Queue: "q"}); len(got) != 2 {
			t.Fatalf("audit trail of the Queue = %+v, want the limit and one removal", got)
		}
	})

	// CheckQueueEmpty: "a Queue holding any job, in any state, is refused
	// with an error wrapping ErrQueueNotEmpty and nothing changes" — a
	// terminal job counts until retention purges it.
	s.run(t, "RefuseQueueHoldingJobs", func(t *testing.T, e *env) {
		e.insertN("q", 2)
		e.finish("q", job.StateSucceeded)
		e.insertKeyed("q", "k", 1)
		e.setLimit("q", 3)
		err := e.removeQueue("q")
		e.wantErr("QueueRemove(3 jobs + 1 finished)", err, store.ErrQueueNotEmpty)
		var ne *store.QueueNotEmptyError
		if !errors.As(err, &ne) || ne.Jobs != 4 || ne.Queue != "q" {
			t.Fatalf("QueueRemove refusal = %v, want a QueueNotEmptyError of 4 jobs", err)
		}
		if q, ok := e.queueInfo("q"); !ok || q.Limit != 3 {
			t.Fatalf("a refused QueueRemove changed the Queue: %+v, %v", q, ok)
		}
		if got := e.audit(store.AuditListParams{Queue: "q", Limit: 1}); len(got) == 1 && got[0].Action == store.AuditQueueRemove {
			t.Fatal("a refused QueueRemove was audited")
		}
	})

	// CheckQueueEmpty: once retention has purged its last job, the Queue
	// may go, and its counts start afresh when it is known again.
	s.run(t, "RemoveQueueOnceRetentionPurgedIt", func(t *testing.T, e *env) {
		e.needAdvance()
		e.finish("q", job.StateSucceeded, job.StateDeadLettered, job.StateCancelled)
		e.wantErr("QueueRemove(finished jobs)", e.removeQueue("q"), store.ErrQueueNotEmpty)
		e.advance(2 * time.Hour)
		if n := e.purge(100, time.Hour, job.StateSucceeded, job.StateDeadLettered, job.StateCancelled); n != 3 {
			t.Fatalf("purged %d jobs, want 3", n)
		}
		if err := e.removeQueue("q"); err != nil {
			t.Fatalf("QueueRemove once purged: %v", err)
		}
		e.insertN("q", 1)
		counts, err := e.s.JobCountByQueue(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.QueueStateCount{{Queue: "q", State: job.StateScheduled, Count: 1}}
		if !slices.Equal(counts, want) {
			t.Fatalf("JobCountByQueue after the Queue came back = %+v, want %+v", counts, want)
		}
	})
}
