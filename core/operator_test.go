package core

import (
	"testing"

	"github.com/backwave/backwave/job"
)

// Glossary, Operator Action: "requeue (Dead-Lettered or Quarantined)";
// Reschedule: "a job that waits (Scheduled or AwaitingParent) ... A running
// or terminal job cannot be rescheduled"; cancel acts on every live job.
func TestOperatorStateGuards(t *testing.T) {
	for _, tc := range []struct {
		state      job.State
		requeue    bool
		reschedule bool
		cancel     CancelEffect
	}{
		{job.StateScheduled, false, true, CancelAtOnce},
		{job.StateAwaitingParent, false, true, CancelAtOnce},
		{job.StateRunning, false, false, CancelRequest},
		{job.StateSucceeded, false, false, CancelRefused},
		{job.StateDeadLettered, true, false, CancelRefused},
		{job.StateCancelled, false, false, CancelRefused},
		{job.StateQuarantined, true, false, CancelRefused},
	} {
		if got := Requeueable(tc.state); got != tc.requeue {
			t.Errorf("Requeueable(%s) = %v, want %v", tc.state, got, tc.requeue)
		}
		if got := Reschedulable(tc.state); got != tc.reschedule {
			t.Errorf("Reschedulable(%s) = %v, want %v", tc.state, got, tc.reschedule)
		}
		if got := OperatorCancel(tc.state); got != tc.cancel {
			t.Errorf("OperatorCancel(%s) = %s, want %s", tc.state, got, tc.cancel)
		}
	}
}
