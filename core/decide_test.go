package core

import (
	"testing"
	"time"

	"github.com/backwave/backwave/job"
)

// TestDecide checks the outcome of every kind of finished Attempt (glossary:
// Attempt, Dead-Lettered, Quarantined, Cancelled, Retry Cause).
func TestDecide(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Initial: time.Second, Max: time.Minute, Multiplier: 2}
	lease := func(a job.Attempt) job.Lease { return job.Lease{ID: 9, Attempt: a} }
	for _, tc := range []struct {
		name     string
		info     AttemptInfo
		result   Result
		state    job.State
		via      Via
		delay    time.Duration
		cause    job.RetryCause
		terminal job.TerminalCause
	}{
		{"success", AttemptInfo{Lease: lease(1), MaxAttempts: 3}, ResultSucceeded, job.StateSucceeded, ViaSucceed, 0, 0, 0},
		{"success after cancel request", AttemptInfo{Lease: lease(1), MaxAttempts: 3, CancelRequested: true}, ResultSucceeded, job.StateSucceeded, ViaSucceed, 0, 0, 0},
		{"first failure retries", AttemptInfo{Lease: lease(1), MaxAttempts: 3}, ResultFailed, job.StateScheduled, ViaRetry, time.Second, job.RetryCauseHandlerFailed, 0},
		{"second failure backs off", AttemptInfo{Lease: lease(2), MaxAttempts: 3}, ResultFailed, job.StateScheduled, ViaRetry, 2 * time.Second, job.RetryCauseHandlerFailed, 0},
		{"failure at ceiling dead-letters", AttemptInfo{Lease: lease(3), MaxAttempts: 3}, ResultFailed, job.StateDeadLettered, ViaDeadLetter, 0, 0, job.TerminalCauseCeilingReached},
		{"failure past ceiling dead-letters", AttemptInfo{Lease: lease(5), MaxAttempts: 3}, ResultFailed, job.StateDeadLettered, ViaDeadLetter, 0, 0, job.TerminalCauseCeilingReached},
		{"ceiling of 1", AttemptInfo{Lease: lease(1), MaxAttempts: 1}, ResultFailed, job.StateDeadLettered, ViaDeadLetter, 0, 0, job.TerminalCauseCeilingReached},
		{"permanent failure", AttemptInfo{Lease: lease(1), MaxAttempts: 25}, ResultFailedPermanently, job.StateDeadLettered, ViaDeadLetter, 0, 0, job.TerminalCausePermanentFailure},
		{"permanent failure at ceiling", AttemptInfo{Lease: lease(3), MaxAttempts: 3}, ResultFailedPermanently, job.StateDeadLettered, ViaDeadLetter, 0, 0, job.TerminalCausePermanentFailure},
		{"capped snooze at ceiling", AttemptInfo{Lease: lease(3), MaxAttempts: 3, Snoozes: 2, MaxSnoozes: 2}, ResultSnoozed, job.StateDeadLettered, ViaDeadLetter, 0, 0, job.TerminalCauseCeilingReached},
		{"failure after cancel request", AttemptInfo{Lease: lease(1), MaxAttempts: 3, CancelRequested: true}, ResultFailed, job.StateCancelled, ViaCancel, 0, 0, 0},
		{"permanent failure after cancel request", AttemptInfo{Lease: lease(1), MaxAttempts: 3, CancelRequested: true}, ResultFailedPermanently, job.StateCancelled, ViaCancel, 0, 0, 0},
		{"unroutable", AttemptInfo{Lease: lease(1), MaxAttempts: 3}, ResultUnroutable, job.StateQuarantined, ViaQuarantine, 0, 0, job.TerminalCauseNoHandler},
		{"undecodable", AttemptInfo{Lease: lease(1), MaxAttempts: 3}, ResultUndecodable, job.StateQuarantined, ViaQuarantine, 0, 0, job.TerminalCauseUndecodablePayload},
		{"undecodable after cancel request", AttemptInfo{Lease: lease(1), MaxAttempts: 3, CancelRequested: true}, ResultUndecodable, job.StateQuarantined, ViaQuarantine, 0, 0, job.TerminalCauseUndecodablePayload},
	} {
		o := Decide(tc.info, tc.result, p)
		if o.Lease != tc.info.Lease || o.State != tc.state || o.Via != tc.via || o.RetryDelay != tc.delay || o.RetryCause != tc.cause || o.TerminalCause != tc.terminal {
			t.Errorf("%s: got %+v, want state=%s via=%s delay=%v cause=%q terminal=%q", tc.name, o, tc.state, tc.via, tc.delay, tc.cause, tc.terminal)
		}
		if err := CheckEdge(job.StateRunning, o.State, o.Via); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !o.TerminalCause.Fits(o.State) {
			t.Errorf("%s: cause %q does not fit %s", tc.name, o.TerminalCause, o.State)
		}
	}
}

// TestTerminalCauseAfter checks the Terminal Cause rule on every legal edge
// and Result: a Dead-Lettered or Quarantined target gets one of its own
// causes, every other target none (so a requeue and a Workflow Retry clear
// it), and a Lease lost at the ceiling is ceiling reached.
func TestTerminalCauseAfter(t *testing.T) {
	t.Parallel()
	results := []Result{0, ResultSucceeded, ResultFailed, ResultFailedPermanently, ResultUnroutable, ResultSnoozed, ResultUndecodable}
	for _, e := range Edges {
		for _, r := range results {
			got := TerminalCauseAfter(e, r)
			if !got.Fits(e.To) {
				t.Errorf("%s after %s: cause %q does not fit %s", e, r, got, e.To)
			}
			if (e.Via == ViaExpire || e.Via == ViaRelinquish) && e.To == job.StateDeadLettered && got != job.TerminalCauseCeilingReached {
				t.Errorf("%s: got %q, want ceiling_reached", e, got)
			}
		}
	}
}

// TestRetryCauseSticky checks the glossary's Retry Cause rule: only a
// failed-Attempt retry and a lease expiry set it, only a requeue clears it.
func TestRetryCauseSticky(t *testing.T) {
	t.Parallel()
	for _, before := range []job.RetryCause{job.RetryCauseNone, job.RetryCauseHandlerFailed, job.RetryCauseLeaseExpired} {
		for _, e := range Edges {
			got := RetryCauseAfter(e, before)
			var want job.RetryCause
			switch e.Via {
			case ViaRetry:
				want = job.RetryCauseHandlerFailed
			case ViaExpire:
				want = before // a terminal outcome keeps the record of its last retry
				if e.To == job.StateScheduled {
					want = job.RetryCauseLeaseExpired
				}
			case ViaRequeue:
				want = job.RetryCauseNone
			default:
				want = before
			}
			if got != want {
				t.Errorf("%s from cause %q: got %q, want %q", e, before, got, want)
			}
		}
	}
}

func TestAfterLeaseLoss(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempt job.Attempt
		max     int
		want    job.State
	}{
		{1, 3, job.StateScheduled}, {2, 3, job.StateScheduled}, {3, 3, job.StateDeadLettered},
		{1, 1, job.StateDeadLettered}, {1, 0, job.StateDeadLettered},
	} {
		if got := AfterLeaseLoss(tc.attempt, tc.max); got != tc.want {
			t.Errorf("AfterLeaseLoss(%d, %d) = %s, want %s", tc.attempt, tc.max, got, tc.want)
		}
	}
}

// TestEdges checks the edge table itself: no duplicates, no edge out of a
// terminal state but the operator's requeue and Workflow Retry, and only
// Workflow Retry leaves Cancelled or Succeeded (glossary, Cancelled:
// reversible only by an explicit Workflow Retry).
func TestEdges(t *testing.T) {
	t.Parallel()
	seen := map[Edge]bool{}
	for _, e := range Edges {
		if seen[e] {
			t.Errorf("duplicate edge %s", e)
		}
		seen[e] = true
		if e.From.Terminal() && e.Via != ViaRequeue && e.Via != ViaWorkflowRetry {
			t.Errorf("edge %s leaves a terminal state automatically", e)
		}
		if e.Via == ViaWorkflowRetry && (!e.From.Terminal() || e.To.Terminal() || e.To == job.StateRunning) {
			t.Errorf("Workflow Retry edge %s must go from a terminal state to a waiting one", e)
		}
		if e.From == job.StateCancelled && e.Via != ViaWorkflowRetry {
			t.Errorf("edge %s leaves Cancelled", e)
		}
		if e.From == job.StateSucceeded && e.Via != ViaWorkflowRetry {
			t.Errorf("edge %s leaves Succeeded", e)
		}
	}
	if Legal(Edge{job.StateSucceeded, job.StateScheduled, ViaRequeue}) {
		t.Error("a Succeeded job must not be requeued")
	}
	if err := CheckEdge(job.StateCancelled, job.StateScheduled, ViaRelease); err == nil {
		t.Error("Cancelled → Scheduled must be illegal")
	}
}
