package core

import "github.com/backwave/backwave/job"

// The state guards of the Operator Actions on jobs: which states each may
// act on. A store reads the job's state, asks here, and refuses any other
// state with store.ErrIllegalTransition, writing nothing.

// Requeueable reports whether an operator requeue may act on a job in
// state s: a Dead-Lettered or Quarantined job (glossary, Operator Action),
// the origins of the requeue edges in Edges.
func Requeueable(s job.State) bool {
	return Legal(Edge{From: s, To: job.StateScheduled, Via: ViaRequeue})
}

// Reschedulable reports whether an operator Reschedule may move the due
// time of a job in state s: a job that waits, Scheduled or Awaiting Parent.
// A Running or terminal job cannot be rescheduled (glossary, Reschedule).
func Reschedulable(s job.State) bool {
	return s == job.StateScheduled || s == job.StateAwaitingParent
}

// CancelEffect is what an operator cancel does to a job, by its state.
type CancelEffect uint8

const (
	// CancelRefused: the job is terminal; the cancel is an illegal
	// transition.
	CancelRefused CancelEffect = iota
	// CancelAtOnce: a waiting job (Scheduled or Awaiting Parent) becomes
	// Cancelled at once, with cancel cause operator.
	CancelAtOnce
	// CancelRequest: a Running job keeps its Lease and gets
	// CancelRequested; however its Attempt ends, it ends Cancelled
	// (UnderCancel, LeaseLoss).
	CancelRequest
)

// String names the effect.
func (c CancelEffect) String() string {
	switch c {
	case CancelRefused:
		return "refused"
	case CancelAtOnce:
		return "at_once"
	case CancelRequest:
		return "request"
	}
	return "cancel_effect(?)"
}

// OperatorCancel says what an operator cancel does to a job in state s.
func OperatorCancel(s job.State) CancelEffect {
	switch {
	case s == job.StateRunning:
		return CancelRequest
	case Legal(Edge{From: s, To: job.StateCancelled, Via: ViaCancel}):
		return CancelAtOnce
	default:
		return CancelRefused
	}
}
