// Package core is BackWave's pure decision logic: the legal state edges, the
// retry policy and its jitter, the attempt ceiling, Retry Cause rules and due
// times. Every function is a deterministic function of its arguments: no clock
// reads, no I/O, no goroutines, no global randomness.
//
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
//
// Stores apply what the Core decides. Where set-based SQL must restate a rule
// (lease expiry, Relinquish at the ceiling), the rule is written here first,
// and the Conformance Suite holds every adapter to it.
package core

import (
	"fmt"

	"github.com/backwave/backwave/job"
)

// Via names the action that moves a job along an edge.
type Via uint8

const (
	// ViaInsert creates a job (from StateUnknown).
	ViaInsert Via = iota + 1
	// ViaClaim leases a due job to a worker and charges an Attempt.
	ViaClaim
	// ViaSucceed applies a successful Attempt's outcome.
	ViaSucceed
	// ViaRetry applies a failed Attempt's outcome below the ceiling.
	ViaRetry
	// ViaDeadLetter applies a failed Attempt's outcome at the ceiling.
	ViaDeadLetter
	// ViaExpire applies a lapsed Lease: it counts as a failed Attempt.
	ViaExpire
	// ViaRelinquish hands a live Lease back on clean shutdown.
	ViaRelinquish
	// ViaQuarantine records that a claimed job could not be routed or decoded.
	ViaQuarantine
	// ViaCancel is an operator cancel, or a Running job that stopped after a
	// cancel request.
	ViaCancel
	// ViaRequeue is the operator requeue of a Dead-Lettered or Quarantined job.
	ViaRequeue
	// ViaRelease is a Dependency latch reaching zero.
	ViaRelease
	// ViaParentFailure cascades an on-success parent's failure.
	ViaParentFailure
	// ViaWorkflowRetry is the Operator Action Workflow Retry reanimating a
	// terminal member of a Workflow in place (Reanimate): the only edges
	// out of Succeeded and Cancelled, and the only path that reverses a
	// Cancelled job.
	ViaWorkflowRetry
	// ViaSnooze applies a snoozed Attempt: the handler asked to be run
	// again after a delay, and the Attempt it used is not charged against
	// the job's attempt budget (Decide, Snooze in job-shapes.md).
	ViaSnooze
)

var viaNames = [...]string{
	ViaInsert:        "insert",
	ViaClaim:         "claim",
	ViaSucceed:       "succeed",
	ViaRetry:         "retry",
	ViaDeadLetter:    "dead_letter",
	ViaExpire:        "expire",
	ViaRelinquish:    "relinquish",
	ViaQuarantine:    "quarantine",
	ViaCancel:        "cancel",
	ViaRequeue:       "requeue",
	ViaRelease:       "release",
	ViaParentFailure: "parent_failure",
	ViaWorkflowRetry: "workflow_retry",
	ViaSnooze:        "snooze",
}

// String returns the action's name.
func (v Via) String() string {
	if int(v) < len(viaNames) && viaNames[v] != "" {
		return viaNames[v]
	}
	return fmt.Sprintf("via(%d)", uint8(v))
}

// Edge is one legal state change: From → To by the action Via.
type Edge struct {
	From job.State
	To   job.State
	Via  Via
}

// String renders the edge as "from -via-> to".
func (e Edge) String() string {
	return fmt.Sprintf("%s -%s-> %s", e.From, e.Via, e.To)
}

// Edges is the complete set of legal state edges, written as data. A store
// moves a job only along one of these; the Simulator's oracle rejects any
// other, and its Coverage report counts which of them a corpus reached.
var Edges = []Edge{
	{job.StateUnknown, job.StateScheduled, ViaInsert},
	{job.StateUnknown, job.StateAwaitingParent, ViaInsert},

	{job.StateScheduled, job.StateRunning, ViaClaim},
	{job.StateScheduled, job.StateCancelled, ViaCancel},

	{job.StateAwaitingParent, job.StateScheduled, ViaRelease},
	{job.StateAwaitingParent, job.StateCancelled, ViaCancel},
	{job.StateAwaitingParent, job.StateCancelled, ViaParentFailure},

	{job.StateRunning, job.StateSucceeded, ViaSucceed},
	{job.StateRunning, job.StateScheduled, ViaRetry},
	{job.StateRunning, job.StateScheduled, ViaSnooze},
	{job.StateRunning, job.StateDeadLettered, ViaDeadLetter},
	{job.StateRunning, job.StateScheduled, ViaExpire},
	{job.StateRunning, job.StateDeadLettered, ViaExpire},
	{job.StateRunning, job.StateScheduled, ViaRelinquish},
	{job.StateRunning, job.StateDeadLettered, ViaRelinquish},
	{job.StateRunning, job.StateQuarantined, ViaQuarantine},
	{job.StateRunning, job.StateCancelled, ViaCancel},

	{job.StateDeadLettered, job.StateScheduled, ViaRequeue},
	{job.StateQuarantined, job.StateScheduled, ViaRequeue},

	// Workflow Retry: every terminal state back to a waiting one, by
	// explicit Operator Action only (Reanimate).
	{job.StateSucceeded, job.StateScheduled, ViaWorkflowRetry},
	{job.StateSucceeded, job.StateAwaitingParent, ViaWorkflowRetry},
	{job.StateDeadLettered, job.StateScheduled, ViaWorkflowRetry},
	{job.StateDeadLettered, job.StateAwaitingParent, ViaWorkflowRetry},
	{job.StateCancelled, job.StateScheduled, ViaWorkflowRetry},
	{job.StateCancelled, job.StateAwaitingParent, ViaWorkflowRetry},
	{job.StateQuarantined, job.StateScheduled, ViaWorkflowRetry},
	{job.StateQuarantined, job.StateAwaitingParent, ViaWorkflowRetry},
}

var legalEdges = func() map[Edge]bool {
	m := make(map[Edge]bool, len(Edges))
	for _, e := range Edges {
		m[e] = true
	}
	return m
}()

// Legal reports whether e is one of Edges.
func Legal(e Edge) bool { return legalEdges[e] }

// CheckEdge returns an error naming the edge if it is not legal.
func CheckEdge(from, to job.State, via Via) error {
	e := Edge{From: from, To: to, Via: via}
	if !Legal(e) {
		return fmt.Errorf("core: illegal state edge %s", e)
	}
	return nil
}
