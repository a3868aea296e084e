package storetest

import (
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func (e *env) purge(limit int, keep time.Duration, states ...job.State) int {
	e.t.Helper()
	res, err := e.s.JobPurge(e.ctx, store.PurgeParams{States: states, KeepFor: keep, Limit: limit})
	if err != nil {
		e.t.Fatalf("JobPurge(%v, keep %v, limit %d): %v", states, keep, limit, err)
	}
	if res.Purged < 0 || res.Purged > limit {
		e.t.Fatalf("JobPurge purged %d with limit %d", res.Purged, limit)
	}
	return res.Purged
}

// wantGone requires the job and everything beside it to be gone.
func (e *env) wantGone(id job.ID) {
	e.t.Helper()
	_, err := e.s.JobGet(e.ctx, id)
	e.wantErr("JobGet(purged)", err, store.ErrNotFound)
	_, err = e.s.JobTransitions(e.ctx, id)
	e.wantErr("JobTransitions(purged)", err, store.ErrNotFound)
	_, err = e.s.JobOutput(e.ctx, id)
	e.wantErr("JobOutput(purged)", err, store.ErrNotFound)
}

// finish drives each job of queue, one at a time, to the state given.
func (e *env) finish(queue string, states ...job.State) []job.ID {
	e.t.Helper()
	ids := make([]job.ID, len(states))
	for i, st := range states {
		e.insert(withMax(queue, 1))
		j := e.claimOne(w1, queue)
		ids[i] = j.ID
		o := succeeded(j)
		switch st {
		case job.StateSucceeded:
			o.Output = []byte("out")
			o.TagDelta = []job.Tag{job.Label("done")}
		case job.StateDeadLettered:
			o = failed(j, 0)
			o.FailureDetail = "boom"
		case job.StateQuarantined:
			o = decide(j, core.ResultUnroutable, 0)
		case job.StateCancelled:
			if _, err := e.s.JobCancel(e.ctx, store.JobCancelParams{ID: j.ID}); err != nil {
				e.t.Fatal(err)
			}
			j.CancelRequested = true
			o = failed(j, 0)
		}
		e.reportApplied(w1, o)
		e.wantState(j.ID, st)
	}
	return ids
}

func testRetention(t *testing.T, s *suite) {
	// JobPurge: "deletes up to Limit jobs in the given terminal States that
	// reached their terminal state at or before the store's now minus
	// KeepFor, each with everything stored beside it".
	s.run(t, "StatesAndHorizon", func(t *testing.T, e *env) {
		e.needAdvance()
		old := e.finish("q", job.StateSucceeded, job.StateCancelled, job.StateDeadLettered, job.StateQuarantined)
		e.advance(2 * time.Hour)
		young := e.finish("q", job.StateSucceeded, job.StateDeadLettered)
		live := e.insertN("q", 1)[0]
		running := e.insertN("r", 1)[0]
		e.claimOne(w2, "r")
		if n := e.purge(100, 3*time.Hour, job.StateSucceeded, job.StateCancelled); n != 0 {
			t.Fatalf("purged %d jobs younger than the horizon", n)
		}
		if n := e.purge(100, time.Hour, job.StateSucceeded, job.StateCancelled); n != 2 {
			t.Fatalf("purged %d succeeded/cancelled jobs, want the 2 old ones", n)
		}
		e.wantGone(old[0])
		e.wantGone(old[1])
		e.wantState(old[2], job.StateDeadLettered)
		if n := e.purge(100, time.Hour, job.StateDeadLettered, job.StateQuarantined); n != 2 {
			t.Fatalf("purged %d dead-lettered/quarantined jobs, want 2", n)
		}
		e.wantGone(old[2])
		e.wantGone(old[3])
		e.wantState(young[0], job.StateSucceeded)
		e.wantState(young[1], job.StateDeadLettered)
		e.wantState(live, job.StateScheduled)
		e.wantState(running, job.StateRunning)
		// KeepFor 0 purges up to now; live jobs never.
		if n := e.purge(100, 0, job.StateSucceeded, job.StateCancelled, job.StateDeadLettered, job.StateQuarantined); n != 2 {
			t.Fatalf("purged %d with no keep horizon, want the 2 young terminal jobs", n)
		}
		list, err := e.s.JobList(e.ctx, store.JobListParams{})
		if err != nil || len(list) != 2 {
			t.Fatalf("JobList after purges = %d jobs, %v; want the 2 live ones", len(list), err)
		}
		counts, err := e.s.JobCountByState(e.ctx, store.CountParams{})
		if err != nil || counts[job.StateSucceeded]+counts[job.StateDeadLettered] != 0 {
			t.Fatalf("JobCountByState after purges = %v, %v", counts, err)
		}
		// The purged ids are not reused.
		if id := e.insertN("q", 1)[0]; id <= running {
			t.Fatalf("insert after purge got id %d, not above %d", id, running)
		}
	})

	// "A result with Purged == Limit says more may be waiting: the caller
	// issues the same sweep again" — bounded batches drain to zero.
	s.run(t, "BoundedBatches", func(t *testing.T, e *env) {
		states := make([]job.State, 5)
		for i := range states {
			states[i] = job.StateSucceeded
		}
		ids := e.finish("q", states...)
		var got []int
		for {
			n := e.purge(2, 0, job.StateSucceeded)
			got = append(got, n)
			if n < 2 {
				break
			}
		}
		if len(got) != 3 || got[0] != 2 || got[1] != 2 || got[2] != 1 {
			t.Fatalf("batches %v, want [2 2 1]", got)
		}
		for _, id := range ids {
			e.wantGone(id)
		}
	})

	// A purged job made by a schedule takes its occurrence record with it
	// ("its schedule occurrence record"), and stops being the latest
	// instance.
	s.run(t, "ScheduleRecords", func(t *testing.T, e *env) {
		e.upsert(hourlyDef("s"))
		id, err := e.s.ScheduleTrigger(e.ctx, store.ScheduleTriggerParams{Name: "s"})
		if err != nil {
			t.Fatal(err)
		}
		e.reportApplied(w1, succeeded(e.claimOne(w1, "q")))
		if n := e.purge(10, 0, job.StateSucceeded); n != 1 {
			t.Fatalf("purged %d, want 1", n)
		}
		e.wantGone(id)
		if occ := e.occurrences("s"); len(occ) != 0 {
			t.Fatalf("records after the job was purged: %+v", occ)
		}
		if sc, _ := e.schedule("s"); sc.LastJob != 0 || sc.InstanceLive {
			t.Fatalf("schedule after its job was purged: %+v", sc)
		}
	})

	// "A job that is still a Dependency parent of a job the store holds is
	// kept ... descendants are purged before their ancestors and a live job
	// never loses an ancestor."
	s.run(t, "DescendantsFirst", func(t *testing.T, e *env) {
		parent := newJob("q")
		child := newJob("q")
		child.Dependency = store.Dependency{Parents: []store.ParentRef{store.InBatch(0)}}
		ids := e.insert(parent, child)
		e.reportApplied(w1, succeeded(e.claimOne(w1, "q")))
		// The parent is terminal; its dependent is live: nothing goes.
		if n := e.purge(10, 0, job.StateSucceeded); n != 0 {
			t.Fatalf("purged %d while the dependent of the only terminal job is live", n)
		}
		e.wantState(ids[0], job.StateSucceeded)
		e.reportApplied(w1, succeeded(e.claimOne(w1, "q")))
		if n := e.purge(10, 0, job.StateSucceeded); n != 1 {
			t.Fatalf("first batch purged %d, want the dependent only", n)
		}
		e.wantGone(ids[1])
		e.wantState(ids[0], job.StateSucceeded)
		if n := e.purge(10, 0, job.StateSucceeded); n != 1 {
			t.Fatalf("second batch purged %d, want the parent", n)
		}
		e.wantGone(ids[0])
	})

	s.run(t, "Validates", func(t *testing.T, e *env) {
		for _, p := range []store.PurgeParams{
			{States: nil, Limit: 1},
			{States: []job.State{job.StateScheduled}, Limit: 1},
			{States: []job.State{job.StateRunning}, Limit: 1},
			{States: []job.State{job.StateSucceeded}, Limit: 0},
			{States: []job.State{job.StateSucceeded}, Limit: 1, KeepFor: -time.Second},
		} {
			_, err := e.s.JobPurge(e.ctx, p)
			e.wantErr("JobPurge with bad params", err, store.ErrInvalidParams)
		}
	})
}
