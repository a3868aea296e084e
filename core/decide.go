package core

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
)

// Result is what the Shell reports about one finished Attempt. The Core never
// sees the error itself or any Failure Detail: only which way it went.
type Result uint8

const (
	// ResultSucceeded means the handler returned without error.
	ResultSucceeded Result = iota + 1
	// ResultFailed means the handler returned an error or panicked.
	ResultFailed
	// ResultFailedPermanently means the handler asked that the job not be
	// retried: it dead-letters at once whatever its Attempt.
	ResultFailedPermanently
	// ResultUnroutable means the Shell could not run the job: no handler is
	// registered for its Wire Name. The job is Quarantined with Terminal
	// Cause no handler.
	ResultUnroutable
	// ResultSnoozed means the handler asked to be run again later
	// (AttemptInfo.SnoozeDelay) without spending an Attempt of the budget.
	ResultSnoozed
	// ResultUndecodable means the Shell could not run the job: its payload
	// did not decode into the handler's arguments, or could not be
	// decrypted. The job is Quarantined with Terminal Cause undecodable
	// payload. (Declared after ResultSnoozed so stored and traced numbers of
	// the older results keep their values.)
	ResultUndecodable
)

var resultNames = [...]string{
	ResultSucceeded:         "succeeded",
	ResultFailed:            "failed",
	ResultFailedPermanently: "failed_permanently",
	ResultUnroutable:        "unroutable",
	ResultSnoozed:           "snoozed",
	ResultUndecodable:       "undecodable",
}

// String returns the result's name.
func (r Result) String() string {
	if int(r) < len(resultNames) && resultNames[r] != "" {
		return resultNames[r]
	}
	return "result(?)"
}

// Outcome is the Core's decision for one finished Attempt, ready for a store
// to apply under the (worker, Attempt) fence.
type Outcome struct {
	Lease job.Lease
	// State is the job's next state: Succeeded, Scheduled (a retry),
	// DeadLettered, Cancelled or Quarantined.
	State job.State
	// Via is the edge's action, for the Transition Log and Coverage.
	Via Via
	// RetryDelay is, for a retry, the delay from the store's clock at apply
	// time to the next due time. Stores add it to their own clock so due
	// times stay in the store's clock domain whatever the node's skew.
	RetryDelay time.Duration
	// RetryCause is set for a retry (handler failed) and left
	// RetryCauseNone otherwise, which means "keep the stored cause": the
	// cause is sticky across terminal outcomes.
	RetryCause job.RetryCause
	// TerminalCause is, for a Dead-Lettered or Quarantined outcome, why
	// (TerminalCauseAfter); none for every other outcome.
	TerminalCause job.TerminalCause
}

// AttemptInfo is what the Core needs to know about a running Attempt to
// decide its outcome.
type AttemptInfo struct {
	Lease       job.Lease
	MaxAttempts int
	// CancelRequested is true once the Driver has signalled the handler to
	// stop because an operator cancelled the job.
	CancelRequested bool
	// Snoozes is how many snoozes the job had applied before this Attempt
	// (job.Job.Snoozes as the claim read it), and MaxSnoozes the cap on
	// them: a snooze at the cap is charged like a failure (SnoozeCapped).
	Snoozes    int
	MaxSnoozes int
	// SnoozeDelay is, for ResultSnoozed, how long after the store applies
	// the outcome the job is due again (CheckSnoozeDelay bounds it).
	SnoozeDelay time.Duration
}

// Decide turns a finished Attempt into its Outcome, as the Driver sees it:
//   - success → Succeeded, even if a cancel was requested meanwhile (the
//     store then applies Cancelled instead: UnderCancel);
//   - unroutable or undecodable → Quarantined;
//   - failure after a cancel request → Cancelled (the handler stopped as
//     asked);
//   - permanent failure, or failure at the attempt ceiling → Dead-Lettered;
//   - otherwise failure → Scheduled after policy.Delay, Retry Cause
//     handler failed;
//   - snooze after a cancel request → Cancelled, like a failure;
//   - snooze below the cap (SnoozeCapped) → Scheduled after SnoozeDelay via
//     ViaSnooze, the Attempt not charged and the Retry Cause kept;
//   - snooze at the cap → exactly what a failure would be: the Attempt is
//     charged, so a handler that snoozes forever dead-letters after its
//     MaxSnoozes free snoozes and its MaxAttempts charged ones.
func Decide(a AttemptInfo, r Result, policy RetryPolicy) Outcome {
	o := Outcome{Lease: a.Lease}
	if r == ResultSnoozed {
		if !a.CancelRequested && !SnoozeCapped(a.Snoozes, a.MaxSnoozes) {
			o.State, o.Via = job.StateScheduled, ViaSnooze
			o.RetryDelay = max(a.SnoozeDelay, 0)
			return o
		}
		r = ResultFailed
	}
	switch r {
	case ResultSucceeded:
		o.State, o.Via = job.StateSucceeded, ViaSucceed
	case ResultUnroutable, ResultUndecodable:
		o.State, o.Via = job.StateQuarantined, ViaQuarantine
	default:
		switch {
		case a.CancelRequested:
			o.State, o.Via = job.StateCancelled, ViaCancel
		case r == ResultFailedPermanently || AtCeiling(a.Lease.Attempt, a.MaxAttempts):
			o.State, o.Via = job.StateDeadLettered, ViaDeadLetter
		default:
			o.State, o.Via = job.StateScheduled, ViaRetry
			o.RetryDelay = policy.Delay(a.Lease.ID, a.Lease.Attempt)
			o.RetryCause = job.RetryCauseHandlerFailed
		}
	}
	o.TerminalCause = TerminalCauseAfter(Edge{From: job.StateRunning, To: o.State, Via: o.Via}, r)
	return o
}

// TerminalCauseAfter returns the Terminal Cause a job carries after moving
// along edge e, where r is the Result that ended the Attempt for an outcome
// edge (Decide) and zero for any other edge. It is the one rule for the
// cause; stores apply it as Decide computed it (Outcome.TerminalCause) and,
// for a Lease lost at the ceiling, restate it as "ceiling_reached":
//   - into Dead-Lettered: permanent failure if the handler said so
//     (ResultFailedPermanently, even at the ceiling: the handler's word is
//     the reason no retry was tried), otherwise ceiling reached — a failed
//     Attempt, a snooze charged at its cap, a lapsed Lease or a Relinquish
//     at the attempt ceiling;
//   - into Quarantined: undecodable payload for ResultUndecodable, no
//     handler otherwise;
//   - any other edge, a requeue or a Workflow Retry out of Dead-Lettered or
//     Quarantined included: none, so only those two states carry a cause.
func TerminalCauseAfter(e Edge, r Result) job.TerminalCause {
	switch e.To {
	case job.StateDeadLettered:
		if e.Via == ViaDeadLetter && r == ResultFailedPermanently {
			return job.TerminalCausePermanentFailure
		}
		return job.TerminalCauseCeilingReached
	case job.StateQuarantined:
		if r == ResultUndecodable {
			return job.TerminalCauseUndecodablePayload
		}
		return job.TerminalCauseNoHandler
	default:
		return job.TerminalCauseNone
	}
}

// MaxSnoozeDelay is the longest delay a snooze may ask for. A longer one is
// bad input (CheckSnoozeDelay): a job that means to wait that long wants a
// due time at enqueue, not a snooze.
const MaxSnoozeDelay = 30 * 24 * time.Hour

// CheckSnoozeDelay returns an error naming d if a snooze may not ask for it:
// negative, or above MaxSnoozeDelay. Zero is allowed and means "due again at
// once".
func CheckSnoozeDelay(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("core: snooze delay %v is negative (want 0 for at once, or a positive delay)", d)
	case d > MaxSnoozeDelay:
		return fmt.Errorf("core: snooze delay %v is above the maximum %v", d, MaxSnoozeDelay)
	}
	return nil
}

// SnoozeCapped reports whether a job that already had snoozes snoozes may
// not snooze again for free: its cap maxSnoozes is reached. A maxSnoozes
// below 0 is treated as 0 (no free snooze). The count covers the job's
// whole existence: an operator requeue gives a new Attempt budget, not new
// snoozes, so a job cannot snooze forever whatever operators do.
func SnoozeCapped(snoozes, maxSnoozes int) bool {
	return snoozes >= max(maxSnoozes, 0)
}

// AtCeiling reports whether a job whose last charged Attempt is attempt has
// had all maxAttempts tries. A maxAttempts below 1 is treated as 1.
func AtCeiling(attempt job.Attempt, maxAttempts int) bool {
	if maxAttempts < 1 {
		maxAttempts = 1
	}
	return int(attempt) >= maxAttempts
}

// AfterLeaseLoss is the state a Running job moves to when its Lease ends
// without an outcome: by expiry (the lapsed Attempt counts like a failure)
// or by Relinquish (a clean stop costs exactly what a lapse costs). At the
// attempt ceiling the job dead-letters; below it, it is Scheduled and due at
// once — the lapsed Lease already spent the backoff — and a Relinquish
// leaves its Attempt as charged. Set-based SQL restates this rule as
// "attempt >= max_attempts"; the Conformance Suite checks it.
func AfterLeaseLoss(attempt job.Attempt, maxAttempts int) job.State {
	if AtCeiling(attempt, maxAttempts) {
		return job.StateDeadLettered
	}
	return job.StateScheduled
}

// LeaseLoss returns the edge a Running job takes when its Lease ends
// without an outcome (via ViaExpire or ViaRelinquish). A job whose operator
// cancel was recorded ends Cancelled by ViaCancel: the operator asked that
// it not run again, and sending it back to Scheduled would run it again (or
// dead-letter a job nobody wants run). Otherwise AfterLeaseLoss decides
// against the job's ceiling (job.Job.Ceiling).
func LeaseLoss(attempt job.Attempt, ceiling int, via Via, cancelRequested bool) (job.State, Via) {
	if cancelRequested {
		return job.StateCancelled, ViaCancel
	}
	return AfterLeaseLoss(attempt, ceiling), via
}

// UnderCancel returns the outcome a store applies for o when the job's
// stored cancel request is cancelRequested. A recorded cancel wins over
// every outcome, success included:
//
//   - glossary, Cancelled: a cancelled job "stays Cancelled under every
//     automatic path" — once the operator's cancel is recorded, no
//     automatic path (an outcome, a retry, an expiry) may take the job
//     elsewhere;
//   - glossary, Operator Action: the cancel is a recorded, defined action;
//     a late success must not silently overrule what an operator was told
//     was recorded;
//   - glossary, Effect-Once: the store applies one outcome per Attempt under
//     the (worker, Attempt) fence, and the cancel request is stored state
//     that the fenced write reads atomically, so the order is decided in
//     one place — the store — whatever the Driver had heard by then.
//
// The side effects a handler that ignored its context already made are
// not undone (At-Least-Once Execution); only the recorded outcome is
// Cancelled. Decide still answers Succeeded for a success (the Driver's
// view); the store settles it with UnderCancel.
func UnderCancel(o Outcome, cancelRequested bool) Outcome {
	if !cancelRequested {
		return o
	}
	return Outcome{Lease: o.Lease, State: job.StateCancelled, Via: ViaCancel}
}

// RetryCauseAfter returns the Retry Cause a job carries after moving along
// edge e, given the cause it carried before. It encodes the glossary's sticky
// rule: a cause records why a job went back to Scheduled because an Attempt
// went wrong, so only a failed-Attempt retry (handler failed) and an expiry
// that reschedules (lease expired) set one; only a requeue clears it; every
// other move — a claim, a Relinquish, a cancel, any terminal outcome,
// including an expiry that dead-letters at the ceiling — leaves it as it was.
// A snooze leaves it too: the handler asked for the delay, no Attempt went
// wrong, and the job is not in the Retrying view for it.
func RetryCauseAfter(e Edge, before job.RetryCause) job.RetryCause {
	switch {
	case e.Via == ViaRetry:
		return job.RetryCauseHandlerFailed
	case e.Via == ViaExpire && e.To == job.StateScheduled:
		return job.RetryCauseLeaseExpired
	case e.Via == ViaRequeue:
		return job.RetryCauseNone
	default:
		return before
	}
}

// DueAt returns when a job inserted at now with the requested run-at time is
// due: the requested time, or now if none was requested.
func DueAt(now, requested time.Time) time.Time {
	if requested.IsZero() {
		return now
	}
	return requested
}

// Claimable reports whether a stored job may be claimed at now: Scheduled
// and due. (A Scheduled job is always below its attempt ceiling: every path
// that would leave it at the ceiling dead-letters it instead.)
func Claimable(j *job.Job, now time.Time) bool {
	return j.State == job.StateScheduled && !j.ScheduledAt.After(now)
}
