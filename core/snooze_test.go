package core

import (
	"testing"
	"time"

	"github.com/backwave/backwave/job"
)

// TestDecideSnooze checks the snooze rows of Decide (docs/job-shapes.md,
// Snooze): below the cap a snooze is free and keeps the Retry Cause, at the
// cap it is charged exactly like a failure, and a cancel request wins.
func TestDecideSnooze(t *testing.T) {
	t.Parallel()
	policy := RetryPolicy{Initial: time.Second, Max: time.Minute, Multiplier: 2}
	l := job.Lease{ID: 7, Attempt: 3}
	tests := []struct {
		name      string
		info      AttemptInfo
		wantState job.State
		wantVia   Via
		wantDelay time.Duration
		wantCause job.RetryCause
	}{
		{"free below the cap", AttemptInfo{Lease: l, MaxAttempts: 5, Snoozes: 0, MaxSnoozes: 2, SnoozeDelay: time.Minute},
			job.StateScheduled, ViaSnooze, time.Minute, job.RetryCauseNone},
		{"free at the last Attempt", AttemptInfo{Lease: l, MaxAttempts: 3, Snoozes: 1, MaxSnoozes: 2, SnoozeDelay: 0},
			job.StateScheduled, ViaSnooze, 0, job.RetryCauseNone},
		{"charged at the cap", AttemptInfo{Lease: l, MaxAttempts: 5, Snoozes: 2, MaxSnoozes: 2, SnoozeDelay: time.Minute},
			job.StateScheduled, ViaRetry, policy.Delay(l.ID, l.Attempt), job.RetryCauseHandlerFailed},
		{"charged at the cap and the ceiling", AttemptInfo{Lease: l, MaxAttempts: 3, Snoozes: 2, MaxSnoozes: 2, SnoozeDelay: time.Minute},
			job.StateDeadLettered, ViaDeadLetter, 0, job.RetryCauseNone},
		{"no free snooze", AttemptInfo{Lease: l, MaxAttempts: 5, MaxSnoozes: 0, SnoozeDelay: time.Minute},
			job.StateScheduled, ViaRetry, policy.Delay(l.ID, l.Attempt), job.RetryCauseHandlerFailed},
		{"cancel wins", AttemptInfo{Lease: l, MaxAttempts: 5, MaxSnoozes: 2, CancelRequested: true, SnoozeDelay: time.Minute},
			job.StateCancelled, ViaCancel, 0, job.RetryCauseNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := Decide(tt.info, ResultSnoozed, policy)
			if o.State != tt.wantState || o.Via != tt.wantVia || o.RetryDelay != tt.wantDelay || o.RetryCause != tt.wantCause {
				t.Fatalf("Decide = %s %s +%v (%q), want %s %s +%v (%q)", o.State, o.Via, o.RetryDelay, o.RetryCause,
					tt.wantState, tt.wantVia, tt.wantDelay, tt.wantCause)
			}
			if err := CheckEdge(job.StateRunning, o.State, o.Via); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSnoozeKeepsRetryCause: a snooze is no Attempt gone wrong, so the
// sticky Retry Cause stays as it was (RetryCauseAfter).
func TestSnoozeKeepsRetryCause(t *testing.T) {
	t.Parallel()
	e := Edge{job.StateRunning, job.StateScheduled, ViaSnooze}
	for _, c := range []job.RetryCause{job.RetryCauseNone, job.RetryCauseHandlerFailed, job.RetryCauseLeaseExpired} {
		if got := RetryCauseAfter(e, c); got != c {
			t.Errorf("RetryCauseAfter(snooze, %q) = %q, want it kept", c, got)
		}
	}
}

func TestCheckSnoozeDelay(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d  time.Duration
		ok bool
	}{
		{0, true}, {time.Nanosecond, true}, {MaxSnoozeDelay, true},
		{-time.Nanosecond, false}, {MaxSnoozeDelay + 1, false},
	} {
		if err := CheckSnoozeDelay(tt.d); (err == nil) != tt.ok {
			t.Errorf("CheckSnoozeDelay(%v) = %v, want ok=%v", tt.d, err, tt.ok)
		}
	}
}
