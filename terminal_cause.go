package backwave

import "fmt"

// EndedBecause returns why a Dead-Lettered or Quarantined job ended so, in
// plain words for the Monitor's surfaces (the CLI, the dashboard, the MCP
// Server), and "" for a job in any other state:
//
//	ceiling reached: 25 of 25 Attempts
//	permanent failure: the handler failed Attempt 3 permanently
//	no handler for Wire Name "email.send"
//	undecodable payload: it does not decode for Wire Name "email.send"
//
// A job with none recorded (finalized by a release before Terminal Causes)
// reads "cause not recorded".
func (j JobInfo) EndedBecause() string {
	if j.State != StateDeadLettered && j.State != StateQuarantined {
		return ""
	}
	switch j.TerminalCause {
	case TerminalCauseCeilingReached:
		used := int(j.Attempt) - (j.Ceiling - j.MaxAttempts) // the Attempts charged in this life
		return fmt.Sprintf("%s: %d of %d Attempts", j.TerminalCause.Words(), used, j.MaxAttempts)
	case TerminalCausePermanentFailure:
		return fmt.Sprintf("%s: the handler failed Attempt %d permanently", j.TerminalCause.Words(), j.Attempt)
	case TerminalCauseNoHandler:
		return fmt.Sprintf("no handler for Wire Name %q", j.WireName)
	case TerminalCauseUndecodablePayload:
		return fmt.Sprintf("%s: it does not decode for Wire Name %q", j.TerminalCause.Words(), j.WireName)
	case TerminalCauseNone:
		return "cause not recorded"
	default:
		return j.TerminalCause.String()
	}
}
