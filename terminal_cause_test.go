package backwave

import "testing"

// TestEndedBecause checks the one wording of each Terminal Cause the
// Monitor's surfaces show (glossary: Dead-Lettered, Quarantined).
func TestEndedBecause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		job  JobInfo
		want string
	}{
		{"ceiling", JobInfo{State: StateDeadLettered, TerminalCause: TerminalCauseCeilingReached, Attempt: 25, MaxAttempts: 25, Ceiling: 25}, "ceiling reached: 25 of 25 Attempts"},
		{"ceiling after a requeue", JobInfo{State: StateDeadLettered, TerminalCause: TerminalCauseCeilingReached, Attempt: 6, MaxAttempts: 3, Ceiling: 6}, "ceiling reached: 3 of 3 Attempts"},
		{"permanent", JobInfo{State: StateDeadLettered, TerminalCause: TerminalCausePermanentFailure, Attempt: 2, MaxAttempts: 25, Ceiling: 25}, "permanent failure: the handler failed Attempt 2 permanently"},
		{"no handler", JobInfo{State: StateQuarantined, TerminalCause: TerminalCauseNoHandler, WireName: "email.send"}, `no handler for Wire Name "email.send"`},
		{"undecodable", JobInfo{State: StateQuarantined, TerminalCause: TerminalCauseUndecodablePayload, WireName: "email.send"}, `undecodable payload: it does not decode for Wire Name "email.send"`},
		{"not recorded", JobInfo{State: StateQuarantined}, "cause not recorded"},
		{"live job", JobInfo{State: StateScheduled}, ""},
		{"succeeded", JobInfo{State: StateSucceeded}, ""},
	} {
		if got := tc.job.EndedBecause(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
