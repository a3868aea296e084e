package job

import "testing"

// TestTerminalCause checks the glossary's Dead-Lettered and Quarantined
// causes: each names its state, round-trips through its stored name, and
// fits only its own state.
func TestTerminalCause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cause TerminalCause
		name  string
		state State
	}{
		{TerminalCauseNone, "", StateUnknown},
		{TerminalCauseCeilingReached, "ceiling_reached", StateDeadLettered},
		{TerminalCausePermanentFailure, "permanent_failure", StateDeadLettered},
		{TerminalCauseNoHandler, "no_handler", StateQuarantined},
		{TerminalCauseUndecodablePayload, "undecodable_payload", StateQuarantined},
	} {
		if got := tc.cause.String(); got != tc.name {
			t.Errorf("%d: String = %q, want %q", tc.cause, got, tc.name)
		}
		back, err := ParseTerminalCause(tc.name)
		if err != nil || back != tc.cause {
			t.Errorf("ParseTerminalCause(%q) = %v, %v; want %v", tc.name, back, err, tc.cause)
		}
		if got := tc.cause.State(); got != tc.state {
			t.Errorf("%q: State = %s, want %s", tc.name, got, tc.state)
		}
		for _, s := range States {
			want := tc.state == s || (tc.cause == TerminalCauseNone && s != StateDeadLettered && s != StateQuarantined)
			if got := tc.cause.Fits(s); got != want {
				t.Errorf("%q fits %s = %v, want %v", tc.name, s, got, want)
			}
		}
		if tc.cause != TerminalCauseNone && tc.cause.Words() == "" {
			t.Errorf("%q has no words", tc.name)
		}
	}
	if _, err := ParseTerminalCause("bogus"); err == nil {
		t.Error("ParseTerminalCause accepted an unknown name")
	}
	if got := TerminalCause(99).String(); got != "terminal_cause(99)" {
		t.Errorf("unknown cause renders %q", got)
	}
}
