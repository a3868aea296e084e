package job

import (
	"fmt"
	"strconv"
)

// TerminalCause records why a job ended Dead-Lettered or Quarantined. Each
// cause belongs to exactly one of the two states (State); every other
// state, live or terminal, carries TerminalCauseNone. An operator requeue
// (or a Workflow Retry) clears it with the state it explains.
type TerminalCause uint8

const (
	// TerminalCauseNone is the cause of a job that is not Dead-Lettered or
	// Quarantined.
	TerminalCauseNone TerminalCause = iota
	// TerminalCauseCeilingReached belongs to Dead-Lettered: the job's
	// Attempt budget is spent (a failed Attempt, a lapsed Lease or a
	// Relinquish at its attempt ceiling).
	TerminalCauseCeilingReached
	// TerminalCausePermanentFailure belongs to Dead-Lettered: the handler
	// said the failure is permanent, so no retry was tried whatever the
	// Attempt budget left.
	TerminalCausePermanentFailure
	// TerminalCauseNoHandler belongs to Quarantined: no handler is
	// registered for the job's Wire Name.
	TerminalCauseNoHandler
	// TerminalCauseUndecodablePayload belongs to Quarantined: the job's
	// payload did not decode into its arguments, or could not be decrypted.
	TerminalCauseUndecodablePayload
)

// TerminalCauses lists every cause other than none, in declaration order.
var TerminalCauses = []TerminalCause{
	TerminalCauseCeilingReached, TerminalCausePermanentFailure,
	TerminalCauseNoHandler, TerminalCauseUndecodablePayload,
}

var terminalCauseNames = [...]string{
	TerminalCauseNone:               "",
	TerminalCauseCeilingReached:     "ceiling_reached",
	TerminalCausePermanentFailure:   "permanent_failure",
	TerminalCauseNoHandler:          "no_handler",
	TerminalCauseUndecodablePayload: "undecodable_payload",
}

var terminalCauseWords = [...]string{
	TerminalCauseNone:               "",
	TerminalCauseCeilingReached:     "ceiling reached",
	TerminalCausePermanentFailure:   "permanent failure",
	TerminalCauseNoHandler:          "no handler",
	TerminalCauseUndecodablePayload: "undecodable payload",
}

// String returns the stored name of the cause ("" for none), e.g.
// "ceiling_reached".
func (c TerminalCause) String() string {
	if int(c) < len(terminalCauseNames) {
		return terminalCauseNames[c]
	}
	return "terminal_cause(" + strconv.Itoa(int(c)) + ")"
}

// Words returns the cause in plain words ("" for none), e.g. "ceiling
// reached": the one wording the Monitor's displays start from.
func (c TerminalCause) Words() string {
	if int(c) < len(terminalCauseWords) {
		return terminalCauseWords[c]
	}
	return c.String()
}

// State returns the state the cause belongs to: Dead-Lettered or
// Quarantined, and StateUnknown for none.
func (c TerminalCause) State() State {
	switch c {
	case TerminalCauseCeilingReached, TerminalCausePermanentFailure:
		return StateDeadLettered
	case TerminalCauseNoHandler, TerminalCauseUndecodablePayload:
		return StateQuarantined
	default:
		return StateUnknown
	}
}

// Fits reports whether a job in state s may carry the cause: a
// Dead-Lettered or Quarantined job carries one of its own state's causes,
// every other state none.
func (c TerminalCause) Fits(s State) bool {
	if s == StateDeadLettered || s == StateQuarantined {
		return c.State() == s
	}
	return c == TerminalCauseNone
}

// ParseTerminalCause is the inverse of TerminalCause.String.
func ParseTerminalCause(s string) (TerminalCause, error) {
	for c, name := range terminalCauseNames {
		if name == s {
			return TerminalCause(c), nil
		}
	}
	return TerminalCauseNone, fmt.Errorf("job: unknown terminal cause %q", s)
}
