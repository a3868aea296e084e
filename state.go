package backwave

import (
	"fmt"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// JobState is where a stored job is in its lifecycle. Scheduled,
// Awaiting-Parent and Running are live; Succeeded, Dead-Lettered, Cancelled
// and Quarantined are terminal. Retrying is not a state: it is the view of
// Scheduled jobs that carry a Retry Cause (JobInfo.Retrying).
type JobState uint8

// The job states, in lifecycle order. Their values are the store's.
const (
	// StateUnknown is the zero JobState. No stored job is in it; it is the
	// From of a job's first Transition Log entry, its insert.
	StateUnknown JobState = JobState(job.StateUnknown)
	// StateScheduled is a live job with a due time, waiting to be claimed.
	StateScheduled JobState = JobState(job.StateScheduled)
	// StateAwaitingParent is a job whose Dependency parents are not all
	// terminal yet.
	StateAwaitingParent JobState = JobState(job.StateAwaitingParent)
	// StateRunning is a job leased to a worker for its current Attempt.
	StateRunning JobState = JobState(job.StateRunning)
	// StateSucceeded is terminal: an Attempt succeeded.
	StateSucceeded JobState = JobState(job.StateSucceeded)
	// StateDeadLettered is terminal: the job exhausted its attempt ceiling.
	// An operator may requeue it.
	StateDeadLettered JobState = JobState(job.StateDeadLettered)
	// StateCancelled is terminal: deliberate non-execution, with a
	// CancelCause.
	StateCancelled JobState = JobState(job.StateCancelled)
	// StateQuarantined is terminal: the job could not be routed (no
	// handler for its Wire Name) or its payload did not decode. An
	// operator may requeue it.
	StateQuarantined JobState = JobState(job.StateQuarantined)
)

// JobStates returns every state a stored job can be in, in lifecycle order.
func JobStates() []JobState {
	out := make([]JobState, len(job.States))
	for i, s := range job.States {
		out[i] = JobState(s)
	}
	return out
}

// ParseJobState reads a state by its stored name, as JobState.String
// writes it: "scheduled", "awaiting_parent", "running", "succeeded",
// "dead_lettered", "cancelled" or "quarantined".
func ParseJobState(s string) (JobState, error) {
	st, err := job.ParseState(s)
	if err != nil {
		return StateUnknown, fmt.Errorf("backwave: unknown job state %q", s)
	}
	return JobState(st), nil
}

// String returns the stored name of the state, e.g. "dead_lettered".
func (s JobState) String() string { return job.State(s).String() }

// Terminal reports whether no automatic path moves a job out of the state:
// Succeeded, Dead-Lettered, Cancelled and Quarantined.
func (s JobState) Terminal() bool { return job.State(s).Terminal() }

// Live reports whether a job in the state still waits for or is doing work:
// Scheduled, Awaiting-Parent and Running.
func (s JobState) Live() bool { return job.State(s).Live() }

func jobStates(states []JobState) []job.State {
	if states == nil {
		return nil
	}
	out := make([]job.State, len(states))
	for i, s := range states {
		out[i] = job.State(s)
	}
	return out
}

// RetryCause says why a job last went back to Scheduled because an Attempt
// went wrong. It is sticky: a claim, a Relinquish, a cancel and a terminal
// outcome leave it as it is; only an operator requeue clears it. A new job
// has none.
type RetryCause uint8

// The Retry Causes.
const (
	// RetryCauseNone: no Attempt of the job has gone wrong, or an operator
	// requeue cleared the record.
	RetryCauseNone RetryCause = RetryCause(job.RetryCauseNone)
	// RetryCauseHandlerFailed: the handler failed and the retry policy
	// scheduled another Attempt.
	RetryCauseHandlerFailed RetryCause = RetryCause(job.RetryCauseHandlerFailed)
	// RetryCauseLeaseExpired: the Lease lapsed before the worker reported
	// an outcome.
	RetryCauseLeaseExpired RetryCause = RetryCause(job.RetryCauseLeaseExpired)
)

// String returns the stored name of the cause: "handler_failed",
// "lease_expired", or "" for none.
func (c RetryCause) String() string { return job.RetryCause(c).String() }

// CancelCause records why a job ended Cancelled.
type CancelCause uint8

// The causes of a Cancelled job.
const (
	// CancelCauseNone is the cause of a job that is not Cancelled.
	CancelCauseNone CancelCause = CancelCause(job.CancelCauseNone)
	// CancelCauseOperator: an Operator Action cancelled the job.
	CancelCauseOperator CancelCause = CancelCause(job.CancelCauseOperator)
	// CancelCauseParentFailure: an on-success Dependency parent ended
	// without succeeding.
	CancelCauseParentFailure CancelCause = CancelCause(job.CancelCauseParentFailure)
)

// String returns the stored name of the cause: "operator",
// "parent_failure", or "" for none.
func (c CancelCause) String() string { return job.CancelCause(c).String() }

// TerminalCause records why a job ended Dead-Lettered or Quarantined; every
// other state carries TerminalCauseNone. A requeue clears it.
type TerminalCause uint8

// The causes of a Dead-Lettered or Quarantined job.
const (
	// TerminalCauseNone is the cause of a job that is not Dead-Lettered or
	// Quarantined.
	TerminalCauseNone TerminalCause = TerminalCause(job.TerminalCauseNone)
	// TerminalCauseCeilingReached (Dead-Lettered): the Attempt budget is
	// spent — the last Attempt failed, or its Lease was lost.
	TerminalCauseCeilingReached TerminalCause = TerminalCause(job.TerminalCauseCeilingReached)
	// TerminalCausePermanentFailure (Dead-Lettered): the handler failed
	// the job permanently (FailPermanently), so it was not retried.
	TerminalCausePermanentFailure TerminalCause = TerminalCause(job.TerminalCausePermanentFailure)
	// TerminalCauseNoHandler (Quarantined): no handler is registered for
	// the job's Wire Name.
	TerminalCauseNoHandler TerminalCause = TerminalCause(job.TerminalCauseNoHandler)
	// TerminalCauseUndecodablePayload (Quarantined): the job's payload did
	// not decode into its handler's arguments, or could not be decrypted.
	TerminalCauseUndecodablePayload TerminalCause = TerminalCause(job.TerminalCauseUndecodablePayload)
)

// String returns the stored name of the cause: "ceiling_reached",
// "permanent_failure", "no_handler", "undecodable_payload", or "" for none.
func (c TerminalCause) String() string { return job.TerminalCause(c).String() }

// Words returns the cause in plain words, e.g. "ceiling reached", or ""
// for none: the wording the Monitor's surfaces start from.
func (c TerminalCause) Words() string { return job.TerminalCause(c).Words() }

// Via names what moved a job along one Transition Log entry.
type Via uint8

// The actions that change a job's state.
const (
	// ViaInsert creates the job (from StateUnknown).
	ViaInsert Via = Via(core.ViaInsert)
	// ViaClaim leases a due job to a worker and charges an Attempt.
	ViaClaim Via = Via(core.ViaClaim)
	// ViaSucceed applies a successful Attempt's outcome.
	ViaSucceed Via = Via(core.ViaSucceed)
	// ViaRetry applies a failed Attempt's outcome below the attempt
	// ceiling.
	ViaRetry Via = Via(core.ViaRetry)
	// ViaDeadLetter applies a failed Attempt's outcome at the ceiling.
	ViaDeadLetter Via = Via(core.ViaDeadLetter)
	// ViaExpire applies a lapsed Lease, which counts as a failed Attempt.
	ViaExpire Via = Via(core.ViaExpire)
	// ViaRelinquish hands a live Lease back on clean shutdown.
	ViaRelinquish Via = Via(core.ViaRelinquish)
	// ViaQuarantine records that a claimed job could not be routed or
	// decoded.
	ViaQuarantine Via = Via(core.ViaQuarantine)
	// ViaCancel is an operator cancel, or a Running job that stopped after
	// a cancel request.
	ViaCancel Via = Via(core.ViaCancel)
	// ViaRequeue is the operator requeue of a Dead-Lettered or Quarantined
	// job.
	ViaRequeue Via = Via(core.ViaRequeue)
	// ViaRelease is a Dependency latch reaching zero.
	ViaRelease Via = Via(core.ViaRelease)
	// ViaParentFailure cascades an on-success parent's failure.
	ViaParentFailure Via = Via(core.ViaParentFailure)
	// ViaWorkflowRetry is Workflow Retry reanimating a terminal member of a
	// Workflow (Admin.RetryWorkflow).
	ViaWorkflowRetry Via = Via(core.ViaWorkflowRetry)
	// ViaSnooze applies a snoozed Attempt (Snooze): the job is due again
	// after the delay its handler asked for, the Attempt not charged.
	ViaSnooze Via = Via(core.ViaSnooze)
)

// String returns the action's name, e.g. "requeue".
func (v Via) String() string { return core.Via(v).String() }
