package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Helpers for Dependency tests.

// child is newJob(queue) with a Dependency of mode on parents.
func child(queue string, mode job.DependencyMode, parents ...store.ParentRef) store.NewJob {
	j := newJob(queue)
	j.Dependency = store.Dependency{Mode: mode, Parents: parents}
	return j
}

// ids returns Existing references to ids.
func existing(ids ...job.ID) []store.ParentRef {
	out := make([]store.ParentRef, len(ids))
	for i, id := range ids {
		out[i] = store.Existing(id)
	}
	return out
}

const (
	onSuccess = job.DependencyOnSuccess
	onAny     = job.DependencyOnAnyTerminal
)

func (e *env) deps(id job.ID) store.DependencyInfo {
	e.t.Helper()
	d, err := e.s.JobDependencies(e.ctx, id)
	if err != nil {
		e.t.Fatalf("JobDependencies(%d): %v", id, err)
	}
	return d
}

// work claims one job from queue as w1 and applies the outcome the Core
// decides for result r (a retry is due at once).
func (e *env) work(queue string, r core.Result) job.Job {
	e.t.Helper()
	j := e.claimOne(w1, queue)
	e.reportApplied(w1, decide(j, r, 0))
	return j
}

// wantCancelledBy requires the job Cancelled with the given cause.
func (e *env) wantCancelledBy(id job.ID, cause job.CancelCause) {
	e.t.Helper()
	j := e.wantState(id, job.StateCancelled)
	if j.CancelCause != cause {
		e.t.Fatalf("job %d is cancelled with cause %q, want %q", id, j.CancelCause, cause)
	}
	if j.FinalizedAt.IsZero() {
		e.t.Fatalf("cancelled job %d has no FinalizedAt", id)
	}
}

// wantLog requires the job's Transition Log to hold exactly these states.
func (e *env) wantLog(id job.ID, states ...job.State) {
	e.t.Helper()
	log := e.transitions(id)
	got := make([]job.State, len(log))
	for i, tr := range log {
		got[i] = tr.State
	}
	if !slices.Equal(got, states) {
		e.t.Fatalf("Transition Log of job %d = %v, want %v", id, got, states)
	}
}

// testDependency checks the Dependency latch (glossary: Dependency,
// Awaiting Parent, Cancelled, Effect-Once) on every path that makes a
// parent terminal.
func testDependency(t *testing.T, s *suite) {
	// Glossary, Awaiting Parent: "a job whose Dependency parent set is not
	// yet fully terminal"; it is never claimed while it waits. A parent's
	// id is below its dependent's (InsertOrder), even when the dependent
	// comes first in the batch.
	s.run(t, "DependentWaitsForParent", func(t *testing.T, e *env) {
		ids := e.insert(child("d", onSuccess, store.InBatch(1)), newJob("p"))
		dep, parent := ids[0], ids[1]
		if parent >= dep {
			t.Fatalf("parent id %d is not below its dependent's %d", parent, dep)
		}
		got := e.wantState(dep, job.StateAwaitingParent)
		if got.Attempt != 0 || !got.FinalizedAt.IsZero() {
			t.Fatalf("waiting job: Attempt %d, FinalizedAt %v", got.Attempt, got.FinalizedAt)
		}
		e.claimNone(w1, "d")
		info := e.deps(dep)
		if info.Mode != onSuccess || len(info.Parents) != 1 || info.Parents[0].ID != parent || info.Parents[0].Counted || info.Pending() != 1 {
			t.Fatalf("JobDependencies(dependent) = %+v", info)
		}
		if pi := e.deps(parent); !slices.Equal(pi.Dependents, []job.ID{dep}) || len(pi.Parents) != 0 {
			t.Fatalf("JobDependencies(parent) = %+v, want dependents [%d]", pi, dep)
		}
	})

	// Glossary, Dependency: the latch reaching zero makes the dependent
	// Scheduled and due — at the store's now, atomically with the parent's
	// outcome.
	s.run(t, "ReleasedWhenParentSucceeds", func(t *testing.T, e *env) {
		ids := e.insert(newJob("p"), child("d", onSuccess, store.InBatch(0)))
		before := e.now()
		e.work("p", core.ResultSucceeded)
		after := e.now()
		got := e.wantState(ids[1], job.StateScheduled)
		e.within("released ScheduledAt", got.ScheduledAt, before, after)
		if got.RetryCause != job.RetryCauseNone || got.Attempt != 0 {
			t.Fatalf("released job: Retry Cause %q, Attempt %d", got.RetryCause, got.Attempt)
		}
		if e.claimOne(w2, "d").ID != ids[1] {
			t.Fatal("the released job is not the one claimed")
		}
		e.wantLog(ids[1], job.StateAwaitingParent, job.StateScheduled, job.StateRunning)
		if info := e.deps(ids[1]); info.Pending() != 0 || !info.Parents[0].Counted || info.Parents[0].State != job.StateSucceeded {
			t.Fatalf("JobDependencies after release = %+v", info)
		}
	})

	// A dependent enqueued to run no earlier than a later time keeps it.
	s.run(t, "ReleaseKeepsLaterDueTime", func(t *testing.T, e *env) {
		later := e.now().Add(time.Hour)
		d := child("d", onSuccess, store.InBatch(0))
		d.ScheduledAt = later
		ids := e.insert(newJob("p"), d)
		e.work("p", core.ResultSucceeded)
		got := e.wantState(ids[1], job.StateScheduled)
		e.within("ScheduledAt", got.ScheduledAt, later, later)
		e.claimNone(w1, "d")
	})

	// Fan-in: the latch counts every parent down before it releases.
	s.run(t, "FanInCountsEveryParent", func(t *testing.T, e *env) {
		for _, mode := range []job.DependencyMode{onSuccess, onAny} {
			ps := e.insertN("p", 3)
			dep := e.insert(child("d", mode, existing(ps...)...))[0]
			for i := range ps {
				e.wantState(dep, job.StateAwaitingParent)
				if got := e.deps(dep).Pending(); got != len(ps)-i {
					t.Fatalf("%s: pending %d after %d parents, want %d", mode, got, i, len(ps)-i)
				}
				e.work("p", core.ResultSucceeded)
			}
			e.wantState(dep, job.StateScheduled)
			e.claimOne(w1, "d")
		}
	})

	// Glossary, Cancelled: "a recorded cause: parent failure (on-success
	// Dependencies)"; Dependency: "Two reaction modes only: on-success
	// (default) and on-any-terminal". Each terminal failure of a parent —
	// Dead-Lettered at the ceiling, dead-lettered permanently, Quarantined
	// (not a success: it never ran), Cancelled by an outcome after an
	// operator's cancel request — cancels an on-success dependent and
	// counts toward an on-any-terminal one.
	s.run(t, "FailedParentByEveryOutcome", func(t *testing.T, e *env) {
		cases := []struct {
			name   string
			parent store.NewJob
			result core.Result
			cancel bool
		}{
			{"dead-lettered at the ceiling", withMax("p", 1), core.ResultFailed, false},
			{"failed permanently", withMax("p", 5), core.ResultFailedPermanently, false},
			{"quarantined", withMax("p", 5), core.ResultUnroutable, false},
			{"cancelled on request", withMax("p", 5), core.ResultFailed, true},
		}
		for _, c := range cases {
			ids := e.insert(c.parent, child("d", onSuccess, store.InBatch(0)), child("d", onAny, store.InBatch(0)))
			j := e.claimOne(w1, "p")
			j.CancelRequested = c.cancel // as the Driver learns it from a renewal
			o := decide(j, c.result, 0)
			e.reportApplied(w1, o)
			if !o.State.Terminal() {
				t.Fatalf("%s: the parent is %s", c.name, o.State)
			}
			e.wantCancelledBy(ids[1], job.CancelCauseParentFailure)
			e.wantLog(ids[1], job.StateAwaitingParent, job.StateCancelled)
			e.wantState(ids[2], job.StateScheduled)
			if got := e.claimOne(w1, "d"); got.ID != ids[2] {
				t.Fatalf("%s: claimed %d, want the on-any-terminal dependent %d", c.name, got.ID, ids[2])
			}
			e.reportApplied(w1, succeeded(e.get(ids[2])))
		}
	})

	// Glossary, Cancelled: parent failure cascades "recursively down the
	// graph": on-success descendants are cancelled at any depth, while an
	// on-any-terminal dependent of a cancelled job counts it and runs.
	s.run(t, "CascadeIsRecursive", func(t *testing.T, e *env) {
		ids := e.insert(
			withMax("p", 1),                                           // 0: fails
			child("d", onSuccess, store.InBatch(0)),                   // 1
			child("d", onSuccess, store.InBatch(1)),                   // 2
			child("d", onSuccess, store.InBatch(2)),                   // 3
			child("d", onAny, store.InBatch(2)),                       // 4: runs
			child("d", onSuccess, store.InBatch(4)),                   // 5: waits for 4
			child("d", onSuccess, store.InBatch(3), store.InBatch(5)), // 6
		)
		e.work("p", core.ResultFailed)
		for _, i := range []int{1, 2, 3, 6} {
			e.wantCancelledBy(ids[i], job.CancelCauseParentFailure)
		}
		e.wantState(ids[4], job.StateScheduled)
		e.wantState(ids[5], job.StateAwaitingParent)
		e.work("d", core.ResultSucceeded) // job 4
		e.wantState(ids[5], job.StateScheduled)
	})

	// A retry is not terminal: it counts nothing.
	s.run(t, "RetryCountsNothing", func(t *testing.T, e *env) {
		ids := e.insert(withMax("p", 3), child("d", onSuccess, store.InBatch(0)))
		e.work("p", core.ResultFailed)
		e.wantState(ids[0], job.StateScheduled)
		e.wantState(ids[1], job.StateAwaitingParent)
		e.work("p", core.ResultSucceeded)
		e.wantState(ids[1], job.StateScheduled)
	})

	// Glossary, Effect-Once: the latch decrement applies once, "caused by
	// the node holding the live Lease for that exact Attempt": a stale or
	// repeated outcome counts nothing, and a parent counts once even when
	// reported twice in one batch.
	s.run(t, "StaleOrRepeatedOutcomeCountsNothing", func(t *testing.T, e *env) {
		ids := e.insert(newJob("p"), newJob("q"), child("d", onSuccess, store.InBatch(0), store.InBatch(1)))
		p := e.claimOne(w1, "p")
		e.reportStale(w2, succeeded(p))
		e.wantState(ids[2], job.StateAwaitingParent)
		res := e.report(w1, succeeded(p), succeeded(p))
		if !res[0].Applied || res[1].Applied {
			t.Fatalf("same Lease twice: applied %v, %v", res[0].Applied, res[1].Applied)
		}
		e.reportStale(w1, succeeded(p))
		if got := e.deps(ids[2]).Pending(); got != 1 {
			t.Fatalf("pending = %d after one parent succeeded (and stale repeats), want 1", got)
		}
		e.wantState(ids[2], job.StateAwaitingParent)
		e.work("q", core.ResultSucceeded)
		e.wantState(ids[2], job.StateScheduled)
		e.wantLog(ids[2], job.StateAwaitingParent, job.StateScheduled)
	})

	// Node Isolation: the isolated node's late success after its Lease
	// expired and another node's Attempt dead-lettered the job is fenced
	// out, and so is its effect on the latch.
	s.run(t, "StaleSuccessAfterExpiryCountsNothing", func(t *testing.T, e *env) {
		e.needAdvance()
		ids := e.insert(withMax("p", 2), child("d", onSuccess, store.InBatch(0)))
		first := e.claimOne(w1, "p")
		e.advance(lease + time.Second)
		e.expire(0, "p")
		e.wantState(ids[1], job.StateAwaitingParent)
		second := e.claimOne(w2, "p")
		e.reportApplied(w2, failed(second, 0)) // at the ceiling: dead-letters
		e.wantCancelledBy(ids[1], job.CancelCauseParentFailure)
		e.reportStale(w1, succeeded(first))
		e.wantCancelledBy(ids[1], job.CancelCauseParentFailure)
	})

	// LeaseExpire: an expiry at the attempt ceiling dead-letters the parent
	// and counts it, in the same step.
	s.run(t, "ExpiryAtCeilingCounts", func(t *testing.T, e *env) {
		e.needAdvance()
		ids := e.insert(withMax("p", 1), child("d", onSuccess, store.InBatch(0)), child("d", onAny, store.InBatch(0)))
		e.claimOne(w1, "p")
		e.advance(lease + time.Second)
		if got := e.expire(0, "p"); len(got) != 1 {
			t.Fatalf("expired %v, want one Lease", got)
		}
		e.wantState(ids[0], job.StateDeadLettered)
		e.wantCancelledBy(ids[1], job.CancelCauseParentFailure)
		e.wantState(ids[2], job.StateScheduled)
	})

	// LeaseRelinquish at the attempt ceiling dead-letters the parent
	// (glossary, Relinquish) and counts it; below the ceiling it counts
	// nothing.
	s.run(t, "RelinquishAtCeilingCounts", func(t *testing.T, e *env) {
		ids := e.insert(withMax("p", 1), withMax("r", 2), child("d", onAny, store.InBatch(0)), child("d", onSuccess, store.InBatch(1)))
		a := e.claimOne(w1, "p")
		b := e.claimOne(w1, "r")
		e.relinquish(w1, a.Lease(), b.Lease())
		e.wantState(ids[0], job.StateDeadLettered)
		e.wantState(ids[2], job.StateScheduled)
		e.wantState(ids[1], job.StateScheduled)
		e.wantState(ids[3], job.StateAwaitingParent)
	})

	// The operator cancel of a waiting parent counts it: its on-success
	// dependents are cancelled for parent failure, its on-any-terminal ones
	// released. A cancelled dependent stays Cancelled (cause operator) when
	// its parents later succeed.
	s.run(t, "OperatorCancel", func(t *testing.T, e *env) {
		ids := e.insert(newJob("p"), child("w", onSuccess, store.InBatch(0)),
			child("d", onSuccess, store.InBatch(1)), child("d", onAny, store.InBatch(1)))
		if err := e.cancel(ids[1]); err != nil {
			t.Fatalf("RequestCancel(waiting job): %v", err)
		}
		e.wantCancelledBy(ids[1], job.CancelCauseOperator)
		e.wantCancelledBy(ids[2], job.CancelCauseParentFailure)
		e.wantState(ids[3], job.StateScheduled)
		e.work("p", core.ResultSucceeded)
		e.wantCancelledBy(ids[1], job.CancelCauseOperator)
		e.wantLog(ids[1], job.StateAwaitingParent, job.StateCancelled)
	})

	// Glossary, Dependency and Awaiting Parent: "A parent that is already
	// terminal when the dependent is enqueued counts at once" — released,
	// or cancelled with its on-success dependents in the same batch.
	s.run(t, "ParentTerminalAtInsert", func(t *testing.T, e *env) {
		e.insert(newJob("p"))
		ok := e.work("p", core.ResultSucceeded)
		e.insert(withMax("p", 1))
		bad := e.work("p", core.ResultFailed)
		e.insert(newJob("p"))
		live := e.claimOne(w1, "p")

		ids := e.insert(
			child("d", onSuccess, store.Existing(ok.ID)),                         // 0: released
			child("d", onSuccess, store.Existing(ok.ID), store.Existing(bad.ID)), // 1: cancelled
			child("d", onSuccess, store.InBatch(1)),                              // 2: cancelled
			child("d", onAny, store.InBatch(1), store.Existing(bad.ID)),          // 3: released
			child("d", onAny, store.Existing(ok.ID), store.Existing(live.ID)),    // 4: waits
		)
		e.wantState(ids[0], job.StateScheduled)
		e.wantLog(ids[0], job.StateAwaitingParent, job.StateScheduled)
		e.wantCancelledBy(ids[1], job.CancelCauseParentFailure)
		e.wantCancelledBy(ids[2], job.CancelCauseParentFailure)
		e.wantState(ids[3], job.StateScheduled)
		e.wantState(ids[4], job.StateAwaitingParent)
		if got := e.deps(ids[4]).Pending(); got != 1 {
			t.Fatalf("pending = %d with one parent live, want 1", got)
		}
		e.reportApplied(w1, failed(live, 0)) // a retry counts nothing
		e.wantState(ids[4], job.StateAwaitingParent)
		e.work("p", core.ResultFailedPermanently)
		e.wantState(ids[4], job.StateScheduled)
		// The already-terminal parents' own states are untouched.
		e.wantState(ok.ID, job.StateSucceeded)
		e.wantState(bad.ID, job.StateDeadLettered)
	})

	// A Dependency's parent set is a set: a parent named twice counts once.
	s.run(t, "ParentNamedTwiceCountsOnce", func(t *testing.T, e *env) {
		ids := e.insert(newJob("p"), newJob("p"))
		dep := e.insert(child("d", onSuccess, store.Existing(ids[0]), store.Existing(ids[0]), store.Existing(ids[1])))[0]
		if got := e.deps(dep); len(got.Parents) != 2 || got.Pending() != 2 {
			t.Fatalf("JobDependencies = %+v, want two parents pending", got)
		}
		e.work("p", core.ResultSucceeded)
		e.wantState(dep, job.StateAwaitingParent)
		e.work("p", core.ResultSucceeded)
		e.wantState(dep, job.StateScheduled)
	})

	// Inserter: "A parent cycle (ErrDependencyCycle) or an Existing parent
	// the store does not hold (ErrUnknownParent) inserts nothing"; a
	// self-edge is a cycle.
	s.run(t, "BadGraphsInsertNothing", func(t *testing.T, e *env) {
		live := e.insertN("ok", 1)[0]
		bad := map[string]struct {
			jobs   []store.NewJob
			target error
		}{
			"self-edge":      {[]store.NewJob{newJob("x"), child("x", onSuccess, store.InBatch(1))}, store.ErrDependencyCycle},
			"two-cycle":      {[]store.NewJob{child("x", onSuccess, store.InBatch(1)), child("x", onSuccess, store.InBatch(0))}, store.ErrDependencyCycle},
			"long cycle":     {[]store.NewJob{newJob("x"), child("x", onAny, store.InBatch(3)), child("x", onSuccess, store.InBatch(1)), child("x", onSuccess, store.InBatch(2), store.InBatch(0))}, store.ErrDependencyCycle},
			"unknown parent": {[]store.NewJob{newJob("x"), child("x", onSuccess, store.Existing(live), store.Existing(live+1000))}, store.ErrUnknownParent},
			"index too big":  {[]store.NewJob{child("x", onSuccess, store.InBatch(2)), newJob("x")}, store.ErrInvalidParams},
			"negative index": {[]store.NewJob{child("x", onSuccess, store.InBatch(-1))}, store.ErrInvalidParams},
			"negative id":    {[]store.NewJob{child("x", onSuccess, store.Existing(-3))}, store.ErrInvalidParams},
			"unknown mode":   {[]store.NewJob{newJob("x"), child("x", job.DependencyMode(9), store.InBatch(0))}, store.ErrInvalidParams},
		}
		for name, c := range bad {
			_, err := e.s.JobInsertMany(e.ctx, store.InsertManyParams{Jobs: c.jobs})
			e.wantErr("JobInsertMany("+name+")", err, c.target)
			e.wantErr("JobInsertMany("+name+")", err, store.ErrInvalidParams)
		}
		if got, err := e.s.JobList(e.ctx, store.JobListParams{}); err != nil || len(got) != 1 {
			t.Fatalf("JobList after refused inserts = %d jobs, %v; want only the first", len(got), err)
		}
		if got := e.deps(live); len(got.Dependents) != 0 {
			t.Fatalf("a refused insert left dependents %v on job %d", got.Dependents, live)
		}
	})

	// JobDependencies of an unknown job.
	s.run(t, "DependenciesOfUnknownJob", func(t *testing.T, e *env) {
		_, err := e.s.JobDependencies(e.ctx, 424242)
		e.wantErr("JobDependencies(unknown)", err, store.ErrNotFound)
	})

	testRequeuedParent(t, s)
}

// testRequeuedParent checks, through Harness.Requeue, that an operator's
// requeue of a failed parent changes nothing downstream (glossary,
// Cancelled: it "stays Cancelled under every automatic path — a failed
// parent later requeued and succeeding never un-cancels it"; Effect-Once:
// the parent's edges were counted once and are not counted again).
func testRequeuedParent(t *testing.T, s *suite) {
	s.run(t, "RequeuedParentCountsNoEdgeTwice", func(t *testing.T, e *env) {
		ids := e.insert(withMax("p", 1), newJob("q"),
			child("d", onSuccess, store.InBatch(0)),               // 2: cancelled
			child("d", onAny, store.InBatch(0), store.InBatch(1)), // 3: waits for q
			child("d", onSuccess, store.InBatch(2)))               // 4: cancelled
		e.work("p", core.ResultFailed)
		e.wantCancelledBy(ids[2], job.CancelCauseParentFailure)
		e.wantCancelledBy(ids[4], job.CancelCauseParentFailure)
		if got := e.deps(ids[3]).Pending(); got != 1 {
			t.Fatalf("pending = %d, want 1 (q)", got)
		}
		if _, err := e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: ids[0], Actor: actor}); err != nil {
			t.Fatalf("Requeue: %v", err)
		}
		e.wantState(ids[0], job.StateScheduled)
		// A dependent enqueued while the requeued parent is live waits for
		// its new outcome.
		late := e.insert(child("d", onSuccess, store.Existing(ids[0])))[0]
		e.wantState(late, job.StateAwaitingParent)
		e.work("p", core.ResultSucceeded)
		e.wantCancelledBy(ids[2], job.CancelCauseParentFailure)
		e.wantCancelledBy(ids[4], job.CancelCauseParentFailure)
		e.wantLog(ids[2], job.StateAwaitingParent, job.StateCancelled)
		e.wantState(ids[3], job.StateAwaitingParent) // p counted once, q not yet
		e.wantState(late, job.StateScheduled)
		e.work("q", core.ResultSucceeded)
		e.wantState(ids[3], job.StateScheduled)
		e.wantLog(ids[3], job.StateAwaitingParent, job.StateScheduled)
	})
}
