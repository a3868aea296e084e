// Package plant names the bugs the Simulator's self-tests plant in the Node
// Driver, the In-Memory Store and the Simulator's own edits of the Driver's
// Commands, to prove each oracle catches the bug it is
// written for (a safety check that never bit proves nothing).
//
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
//
// A planted bug is compiled in only by a build with the tag backwave_plant
// (go test -tags backwave_plant ./internal/sim/...): in every other build
// Enabled is the constant false, so each check `plant.Enabled && bug == …`
// folds away and no planted branch is left in a production hot path. A
// Bug is no configuration knob: the configurations that carry one
// (node.Config, node.WalkerConfig, memstore.Options) hold it in an
// unexported field that only their SetPlant sets, and SetPlant exists only
// in a build with the tag.
package plant

import "slices"

// Bug names one planted bug. Its text is the name Plans carry.
type Bug string

// The planted bugs.
const (
	// None plants nothing.
	None Bug = ""

	// FenceIgnoresAttempt: the store's (worker, Attempt) fence checks only
	// the worker, so a stale Attempt's write lands on a newer one
	// (memstore).
	FenceIgnoresAttempt Bug = "fence-ignores-attempt"
	// ClaimIgnoresLimit: claims ignore every Queue's Concurrency Limit
	// (memstore).
	ClaimIgnoresLimit Bug = "claim-ignores-limit"
	// ClaimIgnoresRate: claims ignore every Queue's Rate Limit (memstore).
	ClaimIgnoresRate Bug = "claim-ignores-rate"
	// ClaimIgnoresKeyLimit: claims ignore every Queue's Key Limit
	// (memstore).
	ClaimIgnoresKeyLimit Bug = "claim-ignores-key-limit"
	// ClaimIgnoresKeyRate: claims ignore every Queue's Key Rate (memstore).
	ClaimIgnoresKeyRate Bug = "claim-ignores-key-rate"
	// ClaimIgnoresKeyOrder: claims ignore Fair Claim and take due jobs in
	// plain due order, so a flooding key starves the others (memstore).
	ClaimIgnoresKeyOrder Bug = "claim-ignores-key-order"
	// LatchRecountsEdges: a parent that reaches a terminal state again
	// after an operator requeue counts its edges again, so one parent counts
	// twice against a latch (memstore).
	LatchRecountsEdges Bug = "latch-recounts-edges"
	// CascadeStopsEarly: a parent-failure cancel stops at the first level:
	// an on-success dependent of a job its parent cancelled is left
	// Awaiting Parent, orphaned (memstore).
	CascadeStopsEarly Bug = "cascade-stops-early"
	// MintIgnoresFence: the store applies a stale mint plan whatever the
	// schedule's revision and mints an occurrence again (memstore).
	MintIgnoresFence Bug = "mint-ignores-fence"
	// RetryReleasesEarly: a Workflow Retry recounts its members' latches
	// against their parents' states before the retry, so a retried
	// dependent of a retried parent is released at once and may run before
	// its parent has ended again (memstore).
	RetryReleasesEarly Bug = "retry-releases-early"
	// WindowRefusesNewer: the store's version-window check refuses every
	// schema newer than the build, the one n-1 step included, so a node one
	// release behind that restarts during a rolling deploy never opens
	// again (memstore).
	WindowRefusesNewer Bug = "window-refuses-newer"
	// CursorIgnoresFence: a renewal or an outcome report stores the Cursor
	// it carries for a Lease it did not renew or apply, so a Cursor saved
	// by a stale Attempt replaces the one the job holds (memstore).
	CursorIgnoresFence Bug = "cursor-ignores-fence"
	// SnoozeCharged: the store applies a snooze without moving the job's
	// AttemptBase, so the snoozed Attempt is charged against the attempt
	// budget and the job dead-letters early (memstore).
	SnoozeCharged Bug = "snooze-charged"

	// CapacityForgetsBuffered: the Driver's free-capacity math forgets
	// buffered outcomes, whose Leases still occupy Workers, so a claim pass
	// may take the node past PoolSize (node).
	CapacityForgetsBuffered Bug = "capacity-forgets-buffered"
	// CoalesceEveryMissed: a Coalesce mint plan makes up every missed
	// occurrence instead of exactly one (the Simulator, as an edit of the
	// Driver's Mint Command).
	CoalesceEveryMissed Bug = "coalesce-every-missed"
	// MintDropsOccurrence: a mint plan silently drops every second on-time
	// occurrence (the Simulator, as an edit of the Driver's Mint Command).
	MintDropsOccurrence Bug = "mint-drops-occurrence"
	// ObserverAdvancesFirst: a Transition Observer's walk moves its durable
	// cursor past a batch before delivering it, so a failed delivery or a
	// node stopping mid-batch loses the rest (node, Walker).
	ObserverAdvancesFirst Bug = "observer-advances-first"
	// SnoozeIgnoresCap: the Driver decides every snooze free whatever the
	// job's snooze count, so a handler that always snoozes loops forever
	// (node).
	SnoozeIgnoresCap Bug = "snooze-ignores-cap"
	// FleetSkipsNothing: the Driver stamps and reads the fleet registry
	// but its claims skip no Wire Name, so a node claims — and
	// Quarantines — jobs it has no handler for while another live node
	// has one (node).
	FleetSkipsNothing Bug = "fleet-skips-nothing"
	// ReplaceRewritesRunning: an insert in Replace or Debounce mode
	// rewrites its unique key's holder while it is Running, under the
	// Attempt that read the old payload (memstore; caught by the
	// Conformance Suite's Replace/NotPendingHolderRefuses).
	ReplaceRewritesRunning Bug = "replace-rewrites-running"
	// BatchDealsShifted: a batch handler call pairs each job with the
	// result of the job after it, so a batch job's outcome is applied
	// under another job's Lease and fence (node, Gather).
	BatchDealsShifted Bug = "batch-deals-shifted"
)

// All returns every planted bug, in a new slice.
func All() []Bug {
	return []Bug{
		FenceIgnoresAttempt, ClaimIgnoresLimit, ClaimIgnoresRate, LatchRecountsEdges, CascadeStopsEarly, MintIgnoresFence, RetryReleasesEarly, WindowRefusesNewer, CursorIgnoresFence, SnoozeCharged,
		CapacityForgetsBuffered, CoalesceEveryMissed, MintDropsOccurrence, ObserverAdvancesFirst, FleetSkipsNothing, SnoozeIgnoresCap,
		ReplaceRewritesRunning, BatchDealsShifted,
		ClaimIgnoresKeyLimit, ClaimIgnoresKeyRate, ClaimIgnoresKeyOrder,
	}
}

// Known reports whether b is None or one of All.
func (b Bug) Known() bool { return b == None || slices.Contains(All(), b) }

// InStore reports whether b lives in the store (the In-Memory Store, the only
// store that can plant it) rather than in the Node Driver.
func (b Bug) InStore() bool {
	switch b {
	case FenceIgnoresAttempt, ClaimIgnoresLimit, ClaimIgnoresRate, LatchRecountsEdges, CascadeStopsEarly, MintIgnoresFence, RetryReleasesEarly, WindowRefusesNewer, CursorIgnoresFence,
		ReplaceRewritesRunning, SnoozeCharged,
		ClaimIgnoresKeyLimit, ClaimIgnoresKeyRate, ClaimIgnoresKeyOrder:
		return true
	}
	return false
}
