package sim

import (
	"fmt"
	"time"
)

// Class is a failure class: the VOPR Runner's exit code depends on it.
type Class uint8

const (
	// ClassSafety: a safety oracle tripped ("if X happened, Y holds").
	ClassSafety Class = iota + 1
	// ClassLiveness: Drain-Liveness tripped under a level that demands it.
	ClassLiveness
	// ClassCrash: something panicked — the harness, or a package below it —
	// or the run blew its event budget.
	ClassCrash
)

// livelockClass is the Class of a livelock under level l: liveness where
// the level demands liveness, and otherwise a crash — a step that never
// settles is no fault-induced stall (no fault repeats at one instant), but
// the glossary's Adversarial level reports no liveness failure at all, so
// it is counted with the blown event budget instead.
func (l Level) livelockClass() Class {
	if l.LivenessChecked() {
		return ClassLiveness
	}
	return ClassCrash
}

// String names the class.
func (c Class) String() string {
	switch c {
	case ClassSafety:
		return "safety"
	case ClassLiveness:
		return "liveness"
	case ClassCrash:
		return "crash"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Invariants: the stable identities of everything a run can trip. The Seed
// Minimizer matches failures by these, never by message text.
const (
	// InvEffectOnce: an Attempt's outcome applied twice, or applied though
	// the reporting node did not hold the live Lease for that exact
	// Attempt (glossary: Effect-Once).
	InvEffectOnce = "effect-once"
	// InvFenceExact: the fence rejected an outcome or renewal from the live
	// holder of that exact Lease.
	InvFenceExact = "fence-exact"
	// InvLeaseEndedEarly: a lease-expiry sweep ended a Lease that had not
	// lapsed at the store's clock.
	InvLeaseEndedEarly = "lease-ended-early"
	// InvAttemptMonotonic: a claim charged an Attempt not above every
	// earlier one of the job, or an Attempt changed outside a claim.
	InvAttemptMonotonic = "attempt-monotonic"
	// InvConcurrencyLimit: a claim took a Queue's Running count above its
	// Concurrency Limit.
	InvConcurrencyLimit = "concurrency-limit"
	// InvRateLimit: a claim made a Queue's window count exceed its Rate
	// Limit (store package doc, Rate Limit).
	InvRateLimit = "rate-limit"
	// InvPausedQueue: a job was claimed from a paused Queue.
	InvPausedQueue = "paused-queue-claimed"
	// InvPoolSize: a Driver held more Leases than its PoolSize
	// (executing + buffered + in-flight outcomes; Backpressure).
	InvPoolSize = "pool-size"
	// InvLegalEdge: a job moved along an edge not in core.Edges.
	InvLegalEdge = "legal-edge"
	// InvCancelledLeft: a Cancelled job left Cancelled.
	InvCancelledLeft = "cancelled-left"
	// InvLostJob: at the end, a live job had no path to progress.
	InvLostJob = "lost-job"
	// InvOrphanedAwaitingParent: at the end, a job was Awaiting Parent with
	// no live or terminal parent able to release it.
	InvOrphanedAwaitingParent = "orphaned-awaiting-parent"
	// InvSlotLeak: at the end, a Queue's count of Running jobs (its
	// Concurrency-Limit slots in use) disagreed with the state changes the
	// store reported, or was not zero with every job terminal.
	InvSlotLeak = "slot-leak"
	// InvDrainLiveness: after faults ceased, a job was not terminal within
	// the derived bound (glossary: Fault Level, Drain-Liveness).
	InvDrainLiveness = "drain-liveness"
	// InvObserverDeliveryLiveness: under Pristine and Recoverable, a
	// transition to a state a Transition Observer declares was never
	// delivered within its bound once the faults ceased (observer.go).
	InvObserverDeliveryLiveness = "observer-delivery-liveness"
	// InvObserverDeliverySafety: a Transition Observer was delivered
	// something the store never applied (observer.go).
	InvObserverDeliverySafety = "observer-delivery-safety"
	// InvLivelock: one step of a node did not settle (commands kept coming
	// at one instant of Virtual Time). A liveness failure under Pristine
	// and Recoverable; under Adversarial, where liveness is not an error
	// (glossary, Fault Level), it is a crash, like a run that blows its
	// event budget (Level.livelockClass).
	InvLivelock = "livelock"
	// InvClaimedBeforeDue: a job was claimed before its due time.
	InvClaimedBeforeDue = "claimed-before-due"
	// InvAttemptCeiling: a claim charged an Attempt past the job's attempt
	// ceiling.
	InvAttemptCeiling = "attempt-ceiling"
	// InvQueueScope: a claim or a lease-expiry sweep touched a job outside
	// the Queues it named.
	InvQueueScope = "queue-scope"
	// InvCancelWithoutRequest: a job ended Cancelled though no operator
	// asked.
	InvCancelWithoutRequest = "cancel-without-request"
	// InvOutcomeDecision: a reported outcome is not what the Core decides
	// for the Attempt's result (checked against a simple twin of
	// core.Decide).
	InvOutcomeDecision = "outcome-decision"
	// InvRetryCause: a job's stored Retry Cause is not the one its last
	// retry or expiry set (the sticky rule).
	InvRetryCause = "retry-cause"
	// InvPanic: a panic escaped the Driver, the store or the harness.
	InvPanic = "panic"
	// InvEventBudget: the run processed more events than its budget.
	InvEventBudget = "event-budget"
	// InvStoreError: the store failed a call the Simulator made correctly.
	InvStoreError = "store-error"
	// InvFleetQuarantine: a node claimed, to Quarantine it, a job of a
	// Wire Name it has no handler for while a live node of the fleet
	// handled it (fleet.go).
	InvFleetQuarantine = "fleet-quarantine"
	// InvMigrationLiveness: after a migration, a node did not resume
	// claiming within the bound (glossary: Fault Level,
	// Migration-Liveness).
	InvMigrationLiveness = "migration-liveness"
	// InvCursorFenced: a job's stored Cursor is not the last one saved
	// under a Lease the store showed held: a stale Attempt's Cursor was
	// accepted, or a live one's lost (cursor.go).
	InvCursorFenced = "cursor-fenced"
)

// Failure is a run's typed failure: which invariant tripped (its stable
// identity), its class, when in Virtual Time, and a human description.
type Failure struct {
	Class     Class         `json:"class"`
	Invariant string        `json:"invariant"`
	At        time.Duration `json:"at"`
	Detail    string        `json:"detail"`
}

// Error implements error.
func (f *Failure) Error() string {
	return fmt.Sprintf("sim: %s failure %q at %v: %s", f.Class, f.Invariant, f.At, f.Detail)
}

// Same reports whether g trips the same invariant as f, by identity.
func (f *Failure) Same(g *Failure) bool {
	return f != nil && g != nil && f.Class == g.Class && f.Invariant == g.Invariant
}

// MarshalText implements encoding.TextMarshaler.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Class) UnmarshalText(b []byte) error {
	for _, k := range []Class{ClassSafety, ClassLiveness, ClassCrash} {
		if k.String() == string(b) {
			*c = k
			return nil
		}
	}
	return fmt.Errorf("%w: unknown failure class %q", ErrInvalidPlan, b)
}
