package sim

import (
	"fmt"
	"strings"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// Situation is a named region of the state space a run may reach, beyond the
// bare state edges: a stale outcome fenced out, a saturated Concurrency
// Limit, a node idling under Backpressure, and so on.
type Situation uint8

// The Situations of the Simulator's built-in checks. An oracle registered
// later declares its own beside it (newSituation).
const (
	// SitStaleOutcomeFenced: the fence rejected a reported outcome as stale.
	SitStaleOutcomeFenced Situation = iota
	// SitLeaseExpiredRetry: an expiry sweep sent a lapsed Lease's job back to Scheduled.
	SitLeaseExpiredRetry
	// SitLeaseExpiredDeadLetter: an expiry sweep dead-lettered a job at its attempt ceiling.
	SitLeaseExpiredDeadLetter
	// SitLimitSaturated: a claim left a Queue at its Concurrency Limit.
	SitLimitSaturated
	// SitBackpressureIdle: a node polled with no free Worker (Backpressure).
	SitBackpressureIdle
	// SitQuarantineReached: a job ended Quarantined.
	SitQuarantineReached
	// SitRelinquished: a stopping node handed a live Lease back.
	SitRelinquished
	// SitHintDroppedButDrained: a run that dropped Wake-Up Hints still drained.
	SitHintDroppedButDrained
	// SitCancelRequestedRunning: an operator cancelled a Running job.
	SitCancelRequestedRunning
	// SitCancelSignalled: a Driver signalled a handler to stop.
	SitCancelSignalled
	// SitCancelledWhileRunning: a Running job ended Cancelled.
	SitCancelledWhileRunning
	// SitCancelledBeforeClaim: a Scheduled job was cancelled before any claim.
	SitCancelledBeforeClaim
	// SitNodeCrash: a node crashed.
	SitNodeCrash
	// SitNodeCrashRecovered: a crashed node restarted.
	SitNodeCrashRecovered
	// SitIsolated: a Node Isolation window began.
	SitIsolated
	// SitIsolationHealed: a Node Isolation window healed.
	SitIsolationHealed
	// SitIsolationHealedStaleWrite: a healed node's outcome was fenced out: the heal-into-stale-write race.
	SitIsolationHealedStaleWrite
	// SitIsolationWithheld: an isolated node's store operation was withheld until heal.
	SitIsolationWithheld
	// SitIsolationRejected: an isolated node's store operation was rejected.
	SitIsolationRejected
	// SitDeadLettered: a job ended Dead-Lettered.
	SitDeadLettered
	// SitRetryScheduled: a failed Attempt was scheduled for retry.
	SitRetryScheduled
	// SitLeaseLostAbandon: a Driver abandoned an Attempt whose Lease it found lost.
	SitLeaseLostAbandon
	// SitShutdownAbandon: a Driver abandoned an Attempt at the end of a drain.
	SitShutdownAbandon
	// SitDeployDrained: a stopping node drained before its drain timeout.
	SitDeployDrained
	// SitResponseReordered: a store response arrived before that of an operation sent earlier.
	SitResponseReordered
	// SitUnknownApplied: a store operation applied but its caller got an error.
	SitUnknownApplied
	// SitUnknownLost: a store operation never applied and its caller got an error.
	SitUnknownLost
	// SitReportRetried: a report failed and its outcomes were buffered again.
	SitReportRetried
	// SitRenewLost: a renewal found a Lease lost.
	SitRenewLost
	// SitHintDropped: a Wake-Up Hint was dropped.
	SitHintDropped
	// SitHintDuplicated: a Wake-Up Hint arrived twice.
	SitHintDuplicated
	// SitHintDelayed: a Wake-Up Hint arrived late.
	SitHintDelayed
	// SitHintCoalesced: a Wake-Up Hint found the pending wake slot full.
	SitHintCoalesced
	// SitHintLostIsolated: a Wake-Up Hint did not reach an isolated node.
	SitHintLostIsolated
	// SitSkewJump: a node's clock jumped.
	SitSkewJump
	// SitSelfReclaim: a node claimed a job while still running an older Attempt of it.
	SitSelfReclaim
	// SitExpireFullSweep: an expiry sweep hit its limit and was re-issued.
	SitExpireFullSweep
	// SitPermanentLoss: a node was lost for good (Adversarial).
	SitPermanentLoss
	// SitDrainedAfterChaos: jobs still live when the faults ceased all ended terminal.
	SitDrainedAfterChaos
	// SitStoreRestarted: the store restarted, losing its hint subscribers.
	SitStoreRestarted
	// SitStoreOutageOp: a store operation failed during a store restart.
	SitStoreOutageOp
	// SitLatchReleased: a Dependency latch reached zero and released its job.
	SitLatchReleased
	// SitParentFailureCascade: an on-success dependent was cancelled for parent failure.
	SitParentFailureCascade
	// SitCascadeDeep: a job was cancelled for the failure of a parent that was itself cancelled for parent failure.
	SitCascadeDeep
	// SitParentTerminalAtInsert: a dependent was inserted with a parent terminal already.
	SitParentTerminalAtInsert
	// SitAnyTerminalAfterFailure: an on-any-terminal dependent was released past a parent that did not succeed.
	SitAnyTerminalAfterFailure
	// SitParentOutcomeFenced: the fence rejected a stale outcome of a job with dependents.
	SitParentOutcomeFenced
	// SitParentOutcomeUnknown: an outcome report naming a job with dependents had an unknown outcome.
	SitParentOutcomeUnknown
	// SitParentLeaseLost: an expiry sweep ended the lapsed Lease of a job with dependents.
	SitParentLeaseLost
	// SitParentRequeued: an operator requeued a failed job with dependents.
	SitParentRequeued
	// SitWaitingCancelled: an operator cancelled a job Awaiting Parent.
	SitWaitingCancelled
	// SitMinted: a mint created a job for an occurrence of a Recurring Schedule.
	SitMinted
	// SitMintStale: a mint plan was stale (another node minted first, or the schedule changed).
	SitMintStale
	// SitMadeUp: a mint created the one make-up job of a missed span (Catch-Up Policy Coalesce).
	SitMadeUp
	// SitSkippedOverlap: an occurrence was skipped because an instance was live (No-Overlap).
	SitSkippedOverlap
	// SitSkippedMissed: a missed span was recorded as skipped (Catch-Up Policy Skip).
	SitSkippedMissed
	// SitPurged: a retention sweep purged terminal jobs.
	SitPurged
	// SitPurgeFullBatch: a retention sweep purged a full batch, so it was issued again.
	SitPurgeFullBatch
	// SitRateSpent: a claim spent a Queue's Rate Limit for its window.
	SitRateSpent
	// SitRateRepoll: a node re-polled when a spent Rate Limit's window
	// reopened (node.PollAfter).
	SitRateRepoll
	// SitObserverRedelivered: a Transition Observer was delivered an entry
	// it had been delivered before (at-least-once at work).
	SitObserverRedelivered
	// SitObserverLeaseTakeover: another node took an Observer's walk over
	// from its last holder.
	SitObserverLeaseTakeover
	// SitObserverDeliveryFailed: an Observer's callback failed and the walk
	// delivered the entry again later.
	SitObserverDeliveryFailed
	// SitWorkflowRetried: an operator's Workflow Retry reanimated members.
	SitWorkflowRetried
	// SitWorkflowRetryWaits: a reanimated member waited, Awaiting Parent,
	// for a reanimated parent.
	SitWorkflowRetryWaits
	// SitWorkflowRetryCancelled: a Workflow Retry reanimated a Cancelled
	// member, the one path out of Cancelled.
	SitWorkflowRetryCancelled
	// SitWorkflowRetryFenced: the fence rejected a late outcome of an
	// Attempt from before a Workflow Retry.
	SitWorkflowRetryFenced
	// SitMigrationFired: the store's schema stepped one migration ahead
	// mid-run (fleet.go).
	SitMigrationFired
	// SitMigrationHeld: a node's store operation waited for the
	// Coordinated Migration lock.
	SitMigrationHeld
	// SitOpenedNewerSchema: a node one release behind started on the
	// schema one n-1 step newer than it knows.
	SitOpenedNewerSchema
	// SitMigrationRefused: a node's start was refused by the version
	// window.
	SitMigrationRefused
	// SitFleetSkipped: a claim skipped Wire Names only another live node
	// handles.
	SitFleetSkipped
	// SitQuarantineNoHandler: a node claimed a job of a Wire Name no live
	// node handled for the grace period, to Quarantine it.
	SitQuarantineNoHandler
	numFixedSituations
)

// maxSituations bounds the Situations, fixed and declared, for the
// fixed-size counters.
const maxSituations = 128

// numSituations counts the Situations: the fixed ones, then those declared
// by newSituation at package initialization, never changed afterwards.
var numSituations = numFixedSituations

// newSituation declares a Situation beside the oracle that reaches it, at
// package initialization (var SitX = newSituation("x")): a name declared
// twice or more Situations than maxSituations is a programming error.
func newSituation(name string) Situation {
	for s := range numSituations {
		if situationNames[s] == name {
			panic(fmt.Sprintf("sim: Situation %q declared twice", name))
		}
	}
	if numSituations >= maxSituations {
		panic(fmt.Sprintf("sim: Situation %q: more than %d Situations", name, maxSituations))
	}
	s := numSituations
	situationNames[s] = name
	numSituations++
	return s
}

var situationNames = [maxSituations]string{
	SitStaleOutcomeFenced:        "stale-outcome-fenced",
	SitLeaseExpiredRetry:         "lease-expired-retry",
	SitLeaseExpiredDeadLetter:    "lease-expired-dead-letter",
	SitLimitSaturated:            "limit-saturated",
	SitBackpressureIdle:          "backpressure-idle",
	SitQuarantineReached:         "quarantine-reached",
	SitRelinquished:              "relinquished",
	SitHintDroppedButDrained:     "hint-dropped-but-drained",
	SitCancelRequestedRunning:    "cancel-requested-running",
	SitCancelSignalled:           "cancel-signalled",
	SitCancelledWhileRunning:     "cancelled-while-running",
	SitCancelledBeforeClaim:      "cancelled-before-claim",
	SitNodeCrash:                 "node-crash",
	SitNodeCrashRecovered:        "node-crash-recovered",
	SitIsolated:                  "isolated",
	SitIsolationHealed:           "isolation-healed",
	SitIsolationHealedStaleWrite: "isolation-healed-stale-write",
	SitIsolationWithheld:         "isolation-withheld-op",
	SitIsolationRejected:         "isolation-rejected-op",
	SitDeadLettered:              "dead-lettered",
	SitRetryScheduled:            "retry-scheduled",
	SitLeaseLostAbandon:          "lease-lost-abandon",
	SitShutdownAbandon:           "shutdown-abandon",
	SitDeployDrained:             "deploy-drained",
	SitResponseReordered:         "response-reordered",
	SitUnknownApplied:            "unknown-outcome-applied",
	SitUnknownLost:               "unknown-outcome-lost",
	SitReportRetried:             "report-retried",
	SitRenewLost:                 "renew-lost",
	SitHintDropped:               "hint-dropped",
	SitHintDuplicated:            "hint-duplicated",
	SitHintDelayed:               "hint-delayed",
	SitHintCoalesced:             "hint-coalesced",
	SitHintLostIsolated:          "hint-lost-isolated",
	SitSkewJump:                  "clock-skew-jump",
	SitSelfReclaim:               "self-reclaim",
	SitExpireFullSweep:           "expire-full-sweep",
	SitPermanentLoss:             "permanent-node-loss",
	SitDrainedAfterChaos:         "drained-after-chaos",
	SitStoreRestarted:            "store-restarted",
	SitStoreOutageOp:             "store-outage-op",
	SitLatchReleased:             "latch-released",
	SitParentFailureCascade:      "parent-failure-cascade",
	SitCascadeDeep:               "parent-failure-cascade-deep",
	SitParentTerminalAtInsert:    "parent-terminal-at-insert",
	SitAnyTerminalAfterFailure:   "any-terminal-after-failure",
	SitParentOutcomeFenced:       "parent-outcome-fenced",
	SitParentOutcomeUnknown:      "parent-outcome-unknown",
	SitParentLeaseLost:           "parent-lease-lost",
	SitParentRequeued:            "parent-requeued",
	SitWaitingCancelled:          "waiting-dependent-cancelled",
	SitMinted:                    "schedule-minted",
	SitMintStale:                 "schedule-mint-stale",
	SitMadeUp:                    "schedule-made-up",
	SitSkippedOverlap:            "schedule-skipped-overlap",
	SitSkippedMissed:             "schedule-skipped-missed",
	SitPurged:                    "retention-purged",
	SitPurgeFullBatch:            "retention-full-batch",
	SitRateSpent:                 "rate-spent",
	SitRateRepoll:                "rate-repoll",
	SitObserverRedelivered:       "observer-redelivered",
	SitObserverLeaseTakeover:     "observer-lease-takeover",
	SitObserverDeliveryFailed:    "observer-delivery-failed",
	SitWorkflowRetried:           "workflow-retried",
	SitWorkflowRetryWaits:        "workflow-retry-waits",
	SitWorkflowRetryCancelled:    "workflow-retry-cancelled-member",
	SitWorkflowRetryFenced:       "workflow-retry-fenced",
	SitMigrationFired:            "migration-fired",
	SitMigrationHeld:             "migration-held-op",
	SitOpenedNewerSchema:         "opened-newer-schema",
	SitMigrationRefused:          "migration-refused-start",
	SitFleetSkipped:              "fleet-skipped",
	SitQuarantineNoHandler:       "quarantine-no-live-handler",
}

// String names the Situation.
func (s Situation) String() string {
	if s < numSituations {
		return situationNames[s]
	}
	return fmt.Sprintf("situation(%d)", uint8(s))
}

// maxEdges bounds len(core.Edges) for the fixed-size counters.
const maxEdges = 32

// edgeIndex maps (from, to, via) to the edge's index in core.Edges, or -1.
var edgeIndex = func() (t [8][8][16]int8) {
	for f := range t {
		for to := range t[f] {
			for v := range t[f][to] {
				t[f][to][v] = -1
			}
		}
	}
	for i, e := range core.Edges {
		t[e.From][e.To][e.Via] = int8(i)
	}
	return t
}()

// Coverage counts the state edges (of core.Edges) and the Situations one run,
// or a union of runs, reached, plus which pairs of Situations co-occurred in
// one run: the novelty signal of the Coverage-Guided Swarm. It is a report,
// not a gate.
type Coverage struct {
	Runs       int
	Edges      [maxEdges]int
	Situations [maxSituations]int
	// pairs[i] holds Situation j when Situations i and j both occurred in
	// one run.
	pairs [maxSituations]situationSet
}

// situationSet is a set of Situations, one bit each, as wide as the list
// may grow.
type situationSet [(maxSituations + 63) / 64]uint64

func (s *situationSet) add(j int)      { s[j/64] |= 1 << (j % 64) }
func (s *situationSet) has(j int) bool { return s[j/64]&(1<<(j%64)) != 0 }

// union adds o to s and reports whether o held a Situation s did not.
func (s *situationSet) union(o *situationSet) (novel bool) {
	for w := range s {
		novel = novel || o[w]&^s[w] != 0
		s[w] |= o[w]
	}
	return novel
}

func (c *Coverage) edge(e core.Edge) {
	if int(e.From) < 8 && int(e.To) < 8 && int(e.Via) < 16 {
		if i := edgeIndex[e.From][e.To][e.Via]; i >= 0 {
			c.Edges[i]++
		}
	}
}

func (c *Coverage) hit(s Situation) { c.Situations[s]++ }

// Hit reports whether the Situation occurred.
func (c *Coverage) Hit(s Situation) bool { return c.Situations[s] > 0 }

// seal records the co-occurring pairs of a single run's Situations.
func (c *Coverage) seal() {
	for i := range numSituations {
		if c.Situations[i] == 0 {
			continue
		}
		for j := range numSituations {
			if c.Situations[j] > 0 {
				c.pairs[i].add(int(j))
			}
		}
	}
}

// Merge adds o's counts to c.
func (c *Coverage) Merge(o *Coverage) {
	c.Runs += o.Runs
	for i := range c.Edges {
		c.Edges[i] += o.Edges[i]
	}
	for i := range c.Situations {
		c.Situations[i] += o.Situations[i]
		c.pairs[i].union(&o.pairs[i])
	}
}

// Novel reports whether o reached an edge, a Situation or a co-occurring
// pair of Situations that c never did.
func (c *Coverage) Novel(o *Coverage) bool {
	for i := range c.Edges {
		if o.Edges[i] > 0 && c.Edges[i] == 0 {
			return true
		}
	}
	for i := range c.Situations {
		if o.Situations[i] > 0 && c.Situations[i] == 0 {
			return true
		}
		if seen := c.pairs[i]; seen.union(&o.pairs[i]) {
			return true
		}
	}
	return false
}

// Counts returns how many legal edges and Situations were reached, and how
// many pairs of Situations co-occurred.
func (c *Coverage) Counts() (edges, situations, pairs int) {
	for i := range core.Edges {
		if c.Edges[i] > 0 {
			edges++
		}
	}
	for i := range numSituations {
		if c.Situations[i] > 0 {
			situations++
		}
		for j := i; j < numSituations; j++ {
			if c.pairs[i].has(int(j)) {
				pairs++
			}
		}
	}
	return edges, situations, pairs
}

// String renders the report: each legal edge and each Situation, hit (with
// its count) or never hit.
func (c *Coverage) String() string {
	var b strings.Builder
	edges, sits, pairs := c.Counts()
	fmt.Fprintf(&b, "coverage over %d runs: %d/%d legal edges, %d/%d situations, %d situation pairs\n",
		c.Runs, edges, len(core.Edges), sits, numSituations, pairs)
	b.WriteString("state edges (core.Edges):\n")
	for i, e := range core.Edges {
		from := e.From.String()
		if e.From == job.StateUnknown {
			from = "(new)"
		}
		label := fmt.Sprintf("%s -%s-> %s", from, e.Via, e.To)
		if c.Edges[i] > 0 {
			fmt.Fprintf(&b, "  hit    %-48s %d\n", label, c.Edges[i])
		} else {
			fmt.Fprintf(&b, "  NEVER  %s\n", label)
		}
	}
	b.WriteString("situations:\n")
	for s := range numSituations {
		if c.Situations[s] > 0 {
			fmt.Fprintf(&b, "  hit    %-48s %d\n", s, c.Situations[s])
		} else {
			fmt.Fprintf(&b, "  NEVER  %s\n", s)
		}
	}
	return b.String()
}
