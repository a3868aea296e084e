package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The safety oracles run as the run goes, at every Fault Level:
//
//   - onTransition sees every state change the store applies (memstore's
//     OnTransition) and checks the edge is legal, that a Cancelled job never
//     leaves Cancelled, that Attempts only grow and only at a claim, that no
//     claim takes a Queue past its Concurrency Limit, past its Rate Limit
//     (rate.go) or out of a paused Queue, that no Attempt's outcome applies twice, and that no expiry
//     ends a Lease that has not lapsed;
//   - the fence oracle (checked.go) reads each reported job's (State, Worker,
//     Attempt) before forwarding a report or renewal and compares it with
//     what the store said it applied: an outcome applies only for the live
//     holder of that exact Attempt (Effect-Once), and the live holder is
//     never fenced out;
//   - simNode.checkHeld holds every Driver to its PoolSize after every step.
//
// finish adds the end-of-run checks: no lost job, no orphaned Awaiting
// Parent, no leaked Concurrency-Limit slot, and Drain-Liveness where the
// level demands it.

// isOutcome reports whether an edge out of Running is an applied outcome.
func isOutcome(v core.Via) bool {
	switch v {
	case core.ViaSucceed, core.ViaRetry, core.ViaDeadLetter, core.ViaQuarantine, core.ViaCancel, core.ViaSnooze:
		return true
	}
	return false
}

// job returns the tracked state of the job with store id id.
func (w *world) job(id job.ID) *jobState {
	if id < 1 || int(id) > len(w.byID) {
		w.failf(ClassSafety, InvStoreError, "store named unknown job %d", id)
		return &jobState{}
	}
	return &w.jobs[w.byID[id-1]]
}

// The registered oracles that see the transition feed or the end of the
// run (oracles.go), in the order they check.
func init() {
	stateless(InvLegalEdge, nil, oracleHooks{onEdge: func(w *world, id job.ID, e core.Edge, _ job.Attempt) {
		if !core.Legal(e) {
			w.failf(ClassSafety, InvLegalEdge, "job %d moved along %s, which is not a legal edge", id, e)
		}
		if e.From == job.StateCancelled && e.Via != core.ViaWorkflowRetry {
			w.failf(ClassSafety, InvCancelledLeft, "Cancelled job %d left Cancelled along %s", id, e)
		}
	}})
	stateless(InvRetryCause, nil, oracleHooks{onEnd: func(w *world, _ bool) {
		w.eachStoredJob(func(js *jobState, j job.Job) {
			if j.RetryCause != js.cause {
				w.failf(ClassSafety, InvRetryCause, "job %d ended %s with Retry Cause %q, want %q", js.id, j.State, j.RetryCause, js.cause)
			}
		})
	}})
}

// eachStoredJob calls fn with every inserted job the store still holds, as
// JobGet reads it now (a job purged after it ended is passed over).
func (w *world) eachStoredJob(fn func(js *jobState, j job.Job)) {
	for i := range w.jobs {
		js := &w.jobs[i]
		if !js.inserted {
			continue
		}
		j, err := w.st.JobGet(w.ctx, js.id)
		if w.purgedOK(i, err) {
			continue
		}
		w.mustStore(err)
		fn(js, j)
	}
}

// onTransition is the store's OnTransition observer: the registered
// oracles that see the feed check each change first (edgeChecker), then the
// fixed checks below.
func (w *world) onTransition(id job.ID, e core.Edge, a job.Attempt) {
	w.noteObserved(id, e, a)
	if e.Via == core.ViaInsert && int(id) == len(w.byID)+1 {
		w.adoptMinted(id)
	}
	defer w.noteTerminal(id, e)
	js := w.job(id)
	q := w.wl.jobs[w.byID[id-1]].queue
	w.cov.edge(e)
	w.traceEdge(id, e, a)
	for _, check := range w.oracles.edges {
		check(w, id, e, a)
	}
	switch e.Via {
	case core.ViaInsert:
		js.inserted = true
		w.live++
	case core.ViaClaim:
		if a <= js.maxAttempt {
			w.failf(ClassSafety, InvAttemptMonotonic, "job %d claimed at Attempt %d after Attempt %d", id, a, js.maxAttempt)
		}
		js.maxAttempt = a
		if ceiling := js.ceilingOf(a, w.wl.jobs[w.byID[id-1]].maxAttempts); int(a) > ceiling {
			w.failf(ClassSafety, InvAttemptCeiling, "job %d claimed at Attempt %d past its ceiling %d", id, a, ceiling)
		}
		if js.due.After(w.storeNow()) {
			w.failf(ClassSafety, InvClaimedBeforeDue, "job %d claimed at %v, due at %v", id, w.now.Sub(w.start), js.due.Sub(w.start))
		}
		if !slices.Contains(w.scope, w.sc.Queues[q].Name) {
			w.failf(ClassSafety, InvQueueScope, "job %d of queue %s claimed by a claim naming %v", id, w.sc.Queues[q].Name, w.scope)
		}
	default:
		if a != js.maxAttempt {
			w.failf(ClassSafety, InvAttemptMonotonic, "job %d moved along %s with Attempt %d, last charged %d", id, e, a, js.maxAttempt)
		}
	}
	if e.From == job.StateRunning {
		w.running[q]--
	}
	if e.To == job.StateRunning {
		w.running[q]++
		if lim := w.limits[q]; lim > 0 && w.running[q] > lim {
			w.failf(ClassSafety, InvConcurrencyLimit, "claim of job %d took queue %s to %d Running with Concurrency Limit %d", id, w.sc.Queues[q].Name, w.running[q], lim)
		}
		if w.paused[q] {
			w.failf(ClassSafety, InvPausedQueue, "job %d claimed from paused queue %s", id, w.sc.Queues[q].Name)
		}
		w.checkRate(q, fmt.Sprintf("claim of job %d", id))
	}
	if e.From == job.StateRunning && isOutcome(e.Via) {
		if slices.Contains(js.outcomes, a) {
			w.failf(ClassSafety, InvEffectOnce, "the outcome of job %d Attempt %d applied twice (now %s)", id, a, e)
		}
		js.outcomes = append(js.outcomes, a)
	}
	if e.Via == core.ViaExpire {
		if js.leaseExp.After(w.storeNow()) {
			w.failf(ClassSafety, InvLeaseEndedEarly, "job %d@%d expired at %v, its Lease runs to %v", id, a, w.now.Sub(w.start), js.leaseExp.Sub(w.start))
		}
		if !slices.Contains(w.scope, w.sc.Queues[q].Name) {
			w.failf(ClassSafety, InvQueueScope, "job %d of queue %s expired by a sweep naming %v", id, w.sc.Queues[q].Name, w.scope)
		}
	}
	if e.To == job.StateCancelled && e.Via != core.ViaParentFailure && !js.cancelRequested {
		w.failf(ClassSafety, InvCancelWithoutRequest, "job %d moved along %s with no operator cancel", id, e)
	}
	switch e.Via {
	case core.ViaRetry:
		js.cause = job.RetryCauseHandlerFailed
	case core.ViaExpire:
		if e.To == job.StateScheduled {
			// An expiry that dead-letters is terminal: the cause stays.
			js.cause = job.RetryCauseLeaseExpired
		}
		js.due = w.storeNow()
	case core.ViaRelinquish:
		js.due = w.storeNow()
	case core.ViaRequeue:
		js.cause = job.RetryCauseNone
		js.due = w.storeNow()
		js.bases = append(js.bases, js.maxAttempt)
	case core.ViaWorkflowRetry:
		// Reanimation starts a new life as a requeue does (core.Reanimate).
		js.cause = job.RetryCauseNone
		js.due = w.storeNow()
		js.bases = append(js.bases, js.maxAttempt)
		js.cancelRequested = false
		js.retriedAbove = js.maxAttempt
	}
	if !e.From.Terminal() && e.To.Terminal() && e.From != job.StateUnknown {
		w.live--
	}
	if e.From.Terminal() && !e.To.Terminal() {
		w.live++ // an operator requeue
	}
	js.state = e.To
	w.edgeSituations(e)
	w.latchTransition(id, e)
}

// edgeSituations records the Situations an edge reaches.
func (w *world) edgeSituations(e core.Edge) {
	switch {
	case e.Via == core.ViaExpire && e.To == job.StateScheduled:
		w.cov.hit(SitLeaseExpiredRetry)
	case e.Via == core.ViaExpire:
		w.cov.hit(SitLeaseExpiredDeadLetter)
	case e.Via == core.ViaRelinquish:
		w.cov.hit(SitRelinquished)
	case e.Via == core.ViaRetry:
		w.cov.hit(SitRetryScheduled)
	case e.From == job.StateRunning && e.To == job.StateCancelled:
		w.cov.hit(SitCancelledWhileRunning)
	case e.From == job.StateScheduled && e.To == job.StateCancelled:
		w.cov.hit(SitCancelledBeforeClaim)
	}
	switch e.To {
	case job.StateQuarantined:
		w.cov.hit(SitQuarantineReached)
	case job.StateDeadLettered:
		w.cov.hit(SitDeadLettered)
	}
}

// holds reports whether the store's row shows worker holding exactly l.
func holds(j *job.Job, worker job.WorkerID, l job.Lease) bool {
	return j.State == job.StateRunning && j.Worker == worker && j.Attempt == l.Attempt
}

// checkReport holds a report's answer to the fence: an outcome applies only
// for the live holder of that exact Attempt (Effect-Once), and the live
// holder is never fenced out.
func (w *world) checkReport(n *simNode, outcomes []core.Outcome, results []store.ReportResult, before []bool) {
	for i, r := range results {
		if i >= len(before) {
			break
		}
		if r.Applied && outcomes[i].State == job.StateScheduled {
			w.job(r.Lease.ID).due = w.storeNow().Add(outcomes[i].RetryDelay)
		}
		switch {
		case r.Applied && !before[i]:
			w.failf(ClassSafety, InvEffectOnce, "outcome %s:%s from %s applied, but the store's row did not show %s holding that Attempt's live Lease", r.Lease, outcomes[i].State, n.worker, n.worker)
		case !r.Applied && before[i]:
			w.failf(ClassSafety, InvFenceExact, "outcome %s from %s fenced out, but %s held that Attempt's live Lease", r.Lease, n.worker, n.worker)
		case !r.Applied:
			w.cov.hit(SitStaleOutcomeFenced)
			if r.Lease.Attempt <= w.job(r.Lease.ID).retriedAbove {
				w.cov.hit(SitWorkflowRetryFenced)
			}
			w.parentSituation(r.Lease.ID, SitParentOutcomeFenced)
			if n.isoTouched && n.isoDepth == 0 {
				w.cov.hit(SitIsolationHealedStaleWrite)
			}
		}
	}
}

// checkDecision holds a reported outcome to a deliberately simple twin of
// core.Decide, fed with what the handler returned and whether the Driver
// signalled it to stop. The ceiling is that of the life the Attempt was
// charged in, so an outcome decided before an operator requeue and
// reported again after it is held to the budget it was decided against.
func (w *world) checkDecision(n *simNode, oc core.Outcome) {
	a := n.attempts[oc.Lease]
	if a == nil || !a.done {
		return
	}
	js := w.job(oc.Lease.ID)
	maxAttempts := js.ceilingOf(oc.Lease.Attempt, w.wl.jobs[w.byID[oc.Lease.ID-1]].maxAttempts)
	result := a.result
	if result == core.ResultSnoozed {
		if w.checkSnoozeDecision(js, a, oc) {
			return
		}
		result = core.ResultFailed // at the cap, or after a cancel signal: charged like a failure
	}
	if oc.Via == core.ViaSnooze {
		w.failf(ClassSafety, InvSnoozeCap, "%s: handler returned %s (signalled=%v) and the outcome is a free snooze", oc.Lease, a.result, a.signalled)
	}
	var want job.State
	var cause job.TerminalCause // why the job ends, if it ends Dead-Lettered or Quarantined
	switch {
	case result == core.ResultSucceeded:
		want = job.StateSucceeded
	case result == core.ResultUnroutable:
		want, cause = job.StateQuarantined, job.TerminalCauseNoHandler
	case result == core.ResultUndecodable:
		want, cause = job.StateQuarantined, job.TerminalCauseUndecodablePayload
	case a.signalled:
		want = job.StateCancelled
	case result == core.ResultFailedPermanently:
		want, cause = job.StateDeadLettered, job.TerminalCausePermanentFailure
	case int(oc.Lease.Attempt) >= maxAttempts:
		want, cause = job.StateDeadLettered, job.TerminalCauseCeilingReached
	default:
		want = job.StateScheduled
	}
	if oc.State != want {
		w.failf(ClassSafety, InvOutcomeDecision, "%s: handler returned %s (signalled=%v, ceiling %d) and the outcome is %s, want %s", oc.Lease, a.result, a.signalled, maxAttempts, oc.State, want)
	}
	if oc.TerminalCause != cause {
		w.failf(ClassSafety, InvTerminalCause, "%s: handler returned %s (signalled=%v, ceiling %d) and the outcome is %s with Terminal Cause %q, want %q",
			oc.Lease, a.result, a.signalled, maxAttempts, oc.State, oc.TerminalCause, cause)
	}
	if top := time.Duration(float64(w.sc.Retry.Max.D()) * (1 + w.sc.Retry.Jitter)); oc.RetryDelay < 0 || oc.RetryDelay > top {
		w.failf(ClassSafety, InvOutcomeDecision, "%s: retry delay %v outside [0, %v]", oc.Lease, oc.RetryDelay, top)
	}
}

func heldWord(held bool) string {
	if held {
		return "showed it held"
	}
	return "showed it not held"
}

// readHeld reads, for each Lease, whether the store's row shows worker
// holding it.
func (w *world) readHeld(worker job.WorkerID, leases []job.Lease) []bool {
	out := make([]bool, len(leases))
	for i, l := range leases {
		j, err := w.st.JobGet(w.ctx, l.ID)
		if err != nil && int(l.ID) <= len(w.byID) && w.purgedOK(w.byID[l.ID-1], err) {
			continue // purged after it ended: held by no one
		}
		if err != nil {
			w.failf(ClassSafety, InvStoreError, "read job %d: %v", l.ID, err)
			continue
		}
		out[i] = holds(&j, worker, l)
	}
	return out
}

// finish ends the run: drained is true when every job ended terminal. The
// registered end-of-run oracles check first (endChecker).
func (w *world) finish(drained bool) {
	w.done = true
	for _, check := range w.oracles.ends {
		check(w, drained)
	}
	w.checkSchedules()
	// The store's Concurrency-Limit slots in use must match the Running jobs
	// the transitions left, and be zero once every job is terminal.
	qs, err := w.st.QueueList(w.ctx)
	w.mustStore(err)
	for _, q := range qs {
		want := 0
		if i, ok := w.queueIx[q.Name]; ok {
			want = w.running[i]
		}
		if q.Running != want || (drained && q.Running != 0) {
			w.failf(ClassSafety, InvSlotLeak, "queue %s counts %d Running, the transitions left %d (drained=%v)", q.Name, q.Running, want, drained)
		}
	}
	if drained {
		if w.hintsDropped > 0 || len(w.faults.Restarts) > 0 {
			w.cov.hit(SitHintDroppedButDrained)
		}
		if w.live0 > 0 {
			w.cov.hit(SitDrainedAfterChaos)
		}
		return
	}
	var stuck []string
	for i := range w.jobs {
		js := &w.jobs[i]
		if !js.inserted || js.state.Terminal() {
			continue
		}
		j, err := w.st.JobGet(w.ctx, js.id)
		if err != nil {
			w.mustStore(err)
			return
		}
		switch j.State {
		case job.StateRunning:
			if j.Worker == "" || j.LeaseExpiresAt.IsZero() {
				w.failf(ClassSafety, InvLostJob, "job %d is Running with no Lease to expire (worker %q, expiry %v)", j.ID, j.Worker, j.LeaseExpiresAt)
			}
		case job.StateScheduled:
			if j.ScheduledAt.IsZero() {
				w.failf(ClassSafety, InvLostJob, "job %d is Scheduled with no due time", j.ID)
			}
		case job.StateAwaitingParent:
			w.checkOrphan(&j)
		}
		if len(stuck) < 5 {
			stuck = append(stuck, fmt.Sprintf("%d@%d %s queue=%s worker=%q due=%v lease=%v", j.ID, j.Attempt, j.State, j.Queue, j.Worker,
				j.ScheduledAt.Sub(w.start), j.LeaseExpiresAt.Sub(w.start)))
		}
	}
	if w.sc.Level.LivenessChecked() {
		w.failf(ClassLiveness, InvDrainLiveness, "%d jobs not terminal %v after the faults ceased (bound %v), e.g. %s",
			w.live, w.now.Sub(w.start)-w.sc.Chaos.D(), w.bound, strings.Join(stuck, "; "))
	}
}
