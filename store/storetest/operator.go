package storetest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testOperator checks the audited Operator Actions (glossary, Operator
// Action: "Always a defined action, never a raw row edit"): requeue,
// reschedule, the audit trail, and Quarantined end to end.
func testOperator(t *testing.T, s *suite) {
	// deadLetter inserts a job with ceiling 2 in q and fails it twice.
	deadLetter := func(e *env, detail string) job.Job {
		e.t.Helper()
		id := e.insert(withMax("q", 2))[0]
		for range 2 {
			j := e.claimOne(w1, "q")
			o := failed(j, 0)
			o.FailureDetail = detail
			e.reportApplied(w1, o)
		}
		return e.wantState(id, job.StateDeadLettered)
	}

	// Glossary, Operator Action: "requeue (Dead-Lettered or Quarantined)";
	// Retry Cause: "only an operator requeue clears it, because the
	// requeued job starts over"; Attempt numbers are never reused, so the
	// counter is kept and the budget starts over above it (AttemptBase).
	s.run(t, "RequeueDeadLetteredStartsOver", func(t *testing.T, e *env) {
		dead := deadLetter(e, "boom")
		if dead.RetryCause != job.RetryCauseHandlerFailed {
			t.Fatalf("dead-lettered job has Retry Cause %q, want handler_failed", dead.RetryCause)
		}
		before := e.now()
		got, err := e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: dead.ID, Actor: actor})
		if err != nil {
			t.Fatalf("JobRequeue: %v", err)
		}
		after := e.now()
		j := e.wantState(dead.ID, job.StateScheduled)
		if got.State != job.StateScheduled || got.AttemptBase != j.AttemptBase {
			t.Fatalf("JobRequeue returned %s base %d, stored %s base %d", got.State, got.AttemptBase, j.State, j.AttemptBase)
		}
		if j.RetryCause != job.RetryCauseNone || j.Attempt != 2 || j.AttemptBase != 2 || j.Ceiling() != 4 || !j.FinalizedAt.IsZero() {
			t.Fatalf("requeued job: RetryCause %q Attempt %d AttemptBase %d Ceiling %d FinalizedAt %v; want none, 2, 2, 4, zero",
				j.RetryCause, j.Attempt, j.AttemptBase, j.Ceiling(), j.FinalizedAt)
		}
		e.within("ScheduledAt", j.ScheduledAt, before, after)
		// Glossary, Retrying: "a requeued job ... Scheduled but not Retrying".
		if ids := e.list(store.JobListParams{JobFilter: store.JobFilter{Retrying: true}}); len(ids) != 0 {
			t.Fatalf("Retrying view lists %v after a requeue", ids)
		}
		log := e.transitions(j.ID)
		if last := log[len(log)-1]; last.Edge() != (core.Edge{From: job.StateDeadLettered, To: job.StateScheduled, Via: core.ViaRequeue}) || last.Attempt != 2 {
			t.Fatalf("last Transition Log entry %s @%d, want dead_lettered -requeue-> scheduled @2", last.Edge(), last.Attempt)
		}
		// A fresh budget of MaxAttempts tries, at Attempts 3 and 4.
		c := e.claimOne(w1, "q")
		if c.Attempt != 3 {
			t.Fatalf("first claim after requeue charged Attempt %d, want 3 (never reused)", c.Attempt)
		}
		e.reportApplied(w1, failed(c, 0))
		e.wantState(c.ID, job.StateScheduled)
		c = e.claimOne(w1, "q")
		o := failed(c, 0)
		if o.State != job.StateDeadLettered {
			t.Fatalf("core decided %s at Attempt %d of ceiling %d, want dead_lettered", o.State, c.Attempt, c.Ceiling())
		}
		e.reportApplied(w1, o)
		e.wantState(c.ID, job.StateDeadLettered)
	})

	// The requeued job's new life also dead-letters at its own ceiling when
	// its Leases lapse (core.AfterLeaseLoss against job.Job.Ceiling).
	s.run(t, "RequeuedCeilingHoldsForExpiry", func(t *testing.T, e *env) {
		dead := deadLetter(e, "")
		if _, err := e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: dead.ID, Actor: actor}); err != nil {
			t.Fatal(err)
		}
		e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		e.expire(0, "q")
		if j := e.wantState(dead.ID, job.StateScheduled); j.RetryCause != job.RetryCauseLeaseExpired {
			t.Fatalf("Retry Cause %q after an expiry below the ceiling", j.RetryCause)
		}
		e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		e.expire(0, "q")
		e.wantState(dead.ID, job.StateDeadLettered)
	})

	// Glossary, Quarantined: "Loud and visible in monitoring" — the reason
	// rides the quarantining entry's Failure Detail, the Monitor lists the
	// job by state, and an operator requeues it after the fix.
	s.run(t, "QuarantinedEndToEnd", func(t *testing.T, e *env) {
		id := e.insertN("q", 1)[0]
		j := e.claimOne(w1, "q")
		o := decide(j, core.ResultUnroutable, 0)
		o.FailureDetail = `no handler is registered for wire name "storetest.job"`
		e.reportApplied(w1, o)
		e.wantState(id, job.StateQuarantined)
		if ids := e.list(store.JobListParams{JobFilter: store.JobFilter{States: []job.State{job.StateQuarantined}}}); len(ids) != 1 || ids[0] != id {
			t.Fatalf("JobList(quarantined) = %v, want [%d]", ids, id)
		}
		log := e.transitions(id)
		if last := log[len(log)-1]; last.State != job.StateQuarantined || last.FailureDetail != o.FailureDetail {
			t.Fatalf("quarantine entry %s %q, want the reason %q", last.State, last.FailureDetail, o.FailureDetail)
		}
		if _, err := e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: id, Actor: actor}); err != nil {
			t.Fatalf("JobRequeue(quarantined): %v", err)
		}
		again := e.claimOne(w1, "q")
		if again.ID != id || again.Attempt != 2 || again.Ceiling() != 1+again.MaxAttempts {
			t.Fatalf("reclaimed %d at Attempt %d ceiling %d", again.ID, again.Attempt, again.Ceiling())
		}
		e.reportApplied(w1, succeeded(again))
		e.wantState(id, job.StateSucceeded)
	})

	// "An action on the wrong state is a clear error", never a raw edit.
	s.run(t, "RequeueWrongStateRefused", func(t *testing.T, e *env) {
		ids := e.insertN("q", 3)
		e.claimOne(w1, "q") // ids[0] stays Running
		done := e.claimOne(w1, "q")
		e.reportApplied(w1, succeeded(done))
		if err := e.cancel(ids[2]); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			before := e.get(id)
			_, err := e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: id, Actor: actor})
			e.wantErr("JobRequeue("+before.State.String()+" job)", err, store.ErrIllegalTransition)
			e.unchanged(before)
		}
		_, err := e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: 987654, Actor: actor})
		e.wantErr("JobRequeue(unknown job)", err, store.ErrNotFound)
		_, err = e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: 0, Actor: actor})
		e.wantErr("JobRequeue(id 0)", err, store.ErrInvalidParams)
		if entries := e.audit(store.AuditListParams{}); len(entries) != 1 || entries[0].Action != store.AuditCancel {
			t.Fatalf("audit trail %+v, want only the cancel: a refused action records nothing", entries)
		}
	})

	// Every Operator Action on every state: "An action the job's current
	// state does not allow fails with ErrIllegalTransition and writes
	// nothing". Which states allow which action is the Core's rule
	// (core.Requeueable, core.Reschedulable, core.OperatorCancel); every
	// store applies it.
	s.run(t, "StateGuards", func(t *testing.T, e *env) {
		for _, st := range job.States {
			requeue, reschedule, cancel := job.StateUnknown, job.StateUnknown, job.StateUnknown // refused
			if core.Requeueable(st) {
				requeue = job.StateScheduled
			}
			if core.Reschedulable(st) {
				reschedule = st
			}
			switch core.OperatorCancel(st) {
			case core.CancelAtOnce:
				cancel = job.StateCancelled
			case core.CancelRequest:
				cancel = job.StateRunning
			case core.CancelRefused:
			}
			for _, a := range []struct {
				name string
				want job.State
				act  func(id job.ID) (job.Job, error)
			}{
				{"JobRequeue", requeue, func(id job.ID) (job.Job, error) {
					return e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: id, Actor: actor})
				}},
				{"JobReschedule", reschedule, func(id job.ID) (job.Job, error) {
					return e.s.JobReschedule(e.ctx, store.JobRescheduleParams{ID: id, Actor: actor, ScheduledAt: e.now().Add(time.Hour)})
				}},
				{"JobCancel", cancel, func(id job.ID) (job.Job, error) {
					return e.s.JobCancel(e.ctx, store.JobCancelParams{ID: id, Actor: actor})
				}},
			} {
				what := a.name + "(" + st.String() + " job)"
				before := e.inState(st)
				got, err := a.act(before.ID)
				if a.want == job.StateUnknown {
					e.wantErr(what, err, store.ErrIllegalTransition)
					e.unchanged(before)
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if stored := e.get(before.ID); got.State != a.want || stored.State != a.want {
					t.Fatalf("%s left the job %s (stored %s), want %s", what, got.State, stored.State, a.want)
				}
			}
		}
	})

	// Glossary, Reschedule: "moves the due time of a job that waits ... The
	// job keeps its id, payload, Attempt, and Retry Cause ... writes an
	// audit record and no Transition Log entry".
	s.run(t, "Reschedule", func(t *testing.T, e *env) {
		e.needAdvance()
		id := e.insertN("q", 1)[0]
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, failed(j, time.Hour))
		before := e.get(id)
		logBefore := len(e.transitions(id))
		to := e.now().Add(time.Minute).Truncate(time.Microsecond)
		got, err := e.s.JobReschedule(e.ctx, store.JobRescheduleParams{ID: id, Actor: actor, ScheduledAt: to})
		if err != nil {
			t.Fatalf("JobReschedule: %v", err)
		}
		after := e.get(id)
		if !after.ScheduledAt.Equal(to) || !got.ScheduledAt.Equal(to) {
			t.Fatalf("ScheduledAt = %v (returned %v), want %v", after.ScheduledAt, got.ScheduledAt, to)
		}
		after.ScheduledAt = before.ScheduledAt
		if d := jobDiff(before, after); d != "" {
			t.Fatalf("reschedule changed more than the due time:\n%s", d)
		}
		if n := len(e.transitions(id)); n != logBefore {
			t.Fatalf("Transition Log grew from %d to %d entries", logBefore, n)
		}
		entries := e.audit(store.AuditListParams{JobID: id})
		if len(entries) != 1 || entries[0].Action != store.AuditReschedule || entries[0].Actor != actor || entries[0].Queue != "q" || !strings.Contains(entries[0].Detail, "scheduled_at") {
			t.Fatalf("audit trail %+v, want one reschedule by %s", entries, actor)
		}
		e.claimNone(w1, "q")
		e.advance(time.Minute)
		if c := e.claimOne(w1, "q"); c.ID != id {
			t.Fatalf("claimed %d, want the rescheduled job %d", c.ID, id)
		}
		// Glossary, Reschedule: "A running or terminal job cannot be
		// rescheduled."
		_, err = e.s.JobReschedule(e.ctx, store.JobRescheduleParams{ID: id, Actor: actor, ScheduledAt: to})
		e.wantErr("JobReschedule(running job)", err, store.ErrIllegalTransition)
		e.reportApplied(w1, succeeded(e.get(id)))
		_, err = e.s.JobReschedule(e.ctx, store.JobRescheduleParams{ID: id, Actor: actor, ScheduledAt: to})
		e.wantErr("JobReschedule(succeeded job)", err, store.ErrIllegalTransition)
		_, err = e.s.JobReschedule(e.ctx, store.JobRescheduleParams{ID: id, Actor: actor})
		e.wantErr("JobReschedule(no time)", err, store.ErrInvalidParams)
	})

	// JobRescheduleParams.After: "this long after now on the store's clock
	// ... inside the action's own transaction"; exactly one of ScheduledAt
	// and After.
	s.run(t, "RescheduleAfter", func(t *testing.T, e *env) {
		id := e.insertN("q", 1)[0]
		before := e.now()
		got, err := e.s.JobReschedule(e.ctx, store.JobRescheduleParams{ID: id, Actor: actor, After: time.Hour})
		if err != nil {
			t.Fatalf("JobReschedule(After 1h): %v", err)
		}
		after := e.now()
		e.within("ScheduledAt after JobReschedule(After 1h)", e.get(id).ScheduledAt, before.Add(time.Hour), after.Add(time.Hour))
		if !got.ScheduledAt.Equal(e.get(id).ScheduledAt) {
			t.Fatalf("returned ScheduledAt %v, stored %v", got.ScheduledAt, e.get(id).ScheduledAt)
		}
		for _, p := range []store.JobRescheduleParams{
			{ID: id, Actor: actor, After: -time.Second},
			{ID: id, Actor: actor, After: time.Hour, ScheduledAt: before.Add(time.Hour)},
		} {
			_, err := e.s.JobReschedule(e.ctx, p)
			e.wantErr(fmt.Sprintf("JobReschedule(After %v, ScheduledAt %v)", p.After, p.ScheduledAt), err, store.ErrInvalidParams)
		}
	})

	// Operator Action: "recorded identity" — who, what, when, which job or
	// Queue — newest first, filtered and paged by id.
	s.run(t, "AuditTrail", func(t *testing.T, e *env) {
		ids := e.insertN("q", 2)
		j := e.claimOne(w1, "q")
		before := e.now()
		mustNil := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		mustNil(e.s.QueuePause(e.ctx, store.QueueParams{Queue: "q", Actor: "alice"}))
		mustNil(e.s.QueueSetLimit(e.ctx, store.QueueSetLimitParams{Queue: "q", Limit: 3, Actor: "bob"}))
		mustNil(e.s.QueueResume(e.ctx, store.QueueParams{Queue: "q"}))
		_, err := e.s.JobCancel(e.ctx, store.JobCancelParams{ID: j.ID, Actor: "carol"})
		mustNil(err)
		_, err = e.s.JobCancel(e.ctx, store.JobCancelParams{ID: ids[1], Actor: "dave"})
		mustNil(err)
		after := e.now()
		got := e.audit(store.AuditListParams{})
		want := []store.AuditEntry{
			{Actor: "dave", Action: store.AuditCancel, JobID: ids[1], Queue: "q"},
			{Actor: "carol", Action: store.AuditCancelRequest, JobID: j.ID, Queue: "q"},
			{Actor: store.ActorSystem, Action: store.AuditQueueResume, Queue: "q"},
			{Actor: "bob", Action: store.AuditQueueSetLimit, Queue: "q", Detail: "limit 3"},
			{Actor: "alice", Action: store.AuditQueuePause, Queue: "q"},
		}
		if len(got) != len(want) {
			t.Fatalf("audit trail has %d entries, want %d: %+v", len(got), len(want), got)
		}
		for i, w := range want {
			g := got[i]
			if g.Actor != w.Actor || g.Action != w.Action || g.JobID != w.JobID || g.Queue != w.Queue || g.Detail != w.Detail {
				t.Fatalf("entry %d = %+v, want %+v", i, g, w)
			}
			e.within("audit At", g.At, before, after)
			if i > 0 && g.ID >= got[i-1].ID {
				t.Fatalf("entries not newest first by id: %d then %d", got[i-1].ID, g.ID)
			}
		}
		if byJob := e.audit(store.AuditListParams{JobID: j.ID}); len(byJob) != 1 || byJob[0].Actor != "carol" {
			t.Fatalf("AuditList(job %d) = %+v", j.ID, byJob)
		}
		page := e.audit(store.AuditListParams{Limit: 2})
		next := e.audit(store.AuditListParams{Limit: 2, BeforeID: page[1].ID})
		if len(page) != 2 || len(next) != 2 || next[0].ID != got[2].ID {
			t.Fatalf("keyset pages %+v then %+v", page, next)
		}
		if err := e.s.QueuePause(e.ctx, store.QueueParams{Queue: "q", Actor: "bad\nactor"}); err == nil {
			t.Fatal("an Actor with a control character was accepted")
		}
	})
}

func (e *env) audit(p store.AuditListParams) []store.AuditEntry {
	e.t.Helper()
	out, err := e.s.AuditList(e.ctx, p)
	if err != nil {
		e.t.Fatalf("AuditList: %v", err)
	}
	return out
}

// inState makes a job in state st, alone in a Queue of its own, and returns
// it as stored.
func (e *env) inState(st job.State) job.Job {
	e.t.Helper()
	e.queues++
	q := "guard-" + strconv.Itoa(e.queues)
	id := e.insert(withMax(q, 1))[0]
	switch st {
	case job.StateScheduled:
	case job.StateAwaitingParent:
		child := newJob(q)
		child.Dependency = store.Dependency{Parents: []store.ParentRef{store.Existing(id)}}
		id = e.insert(child)[0]
	case job.StateCancelled:
		if err := e.cancel(id); err != nil {
			e.t.Fatal(err)
		}
	default:
		j := e.claimOne(w1, q)
		switch st {
		case job.StateRunning:
		case job.StateSucceeded:
			e.reportApplied(w1, succeeded(j))
		case job.StateDeadLettered:
			e.reportApplied(w1, failed(j, 0))
		case job.StateQuarantined:
			e.reportApplied(w1, decide(j, core.ResultUnroutable, 0))
		default:
			e.t.Fatalf("storetest: no way to make a %s job", st)
		}
	}
	return e.wantState(id, st)
}
