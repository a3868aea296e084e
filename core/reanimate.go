package core

import (
	"slices"
	"time"

	"github.com/backwave/backwave/job"
)

// Reanimation: the one path from a terminal state back to a waiting one,
// the Operator Action Workflow Retry. Nothing automatic ever takes it — a
// Cancelled job stays Cancelled under every automatic path — and the Core
// knows it only as a set of jobs and their Dependency edges: which ones a
// retry reanimates (RetrySet), where each goes and what it forgets
// (Reanimate), and how the latches are recounted (Recount).
//
// The fence needs nothing new. A reanimated job is Scheduled or Awaiting
// Parent, not Running, so a late outcome of an Attempt from before the
// retry finds no Lease and is stale; its next claim charges a fresh
// Attempt above every number used before, so no old (worker, Attempt)
// pair can ever name it again.

// RetryNode is one member of the graph a Workflow Retry acts on: its id,
// state, cancel cause, Dependency mode and parents (all members of the
// graph, each with an id below the node's).
type RetryNode struct {
	ID          job.ID
	State       job.State
	CancelCause job.CancelCause
	Mode        job.DependencyMode
	Parents     []job.ID
}

// RetrySet returns, ascending, the ids of the nodes a retry of the given
// scope reanimates. Only terminal nodes are ever named.
//   - RetryAll: every terminal node.
//   - RetryFailed: the failed nodes (job.WorkflowFailedMember):
//     Dead-Lettered, Quarantined, Cancelled by an operator.
//   - RetryFailedAndDownstream: the failed nodes and every terminal node
//     reachable from one along parent→dependent edges (through live nodes
//     too), Succeeded ones and those Cancelled by a parent's failure
//     included.
//
// A node the scope names is left out when it could never run: an
// on-success node with a parent that stays terminal without succeeding
// (not reanimated itself), which would fail it again at once
// (ParentFails). Leaving it out leaves its on-success dependents a failed
// parent in turn, so they are left out too. An unknown scope names nothing.
func RetrySet(nodes []RetryNode, scope job.WorkflowRetryScope) []job.ID {
	out := scopeSet(nodes, scope)
	in := make(map[job.ID]bool, len(out))
	for _, id := range out {
		in[id] = true
	}
	byID := make(map[job.ID]*RetryNode, len(nodes))
	for i := range nodes {
		byID[nodes[i].ID] = &nodes[i]
	}
	// Ascending ids put every parent before its dependents, so one pass
	// settles each node after its parents.
	kept := out[:0]
	for _, id := range out {
		n := byID[id]
		doomed := false
		for _, p := range n.Parents {
			if pn := byID[p]; pn != nil && !in[p] && ParentFails(n.Mode, pn.State) {
				doomed = true
				break
			}
		}
		if doomed {
			delete(in, id)
			continue
		}
		kept = append(kept, id)
	}
	return kept
}

// scopeSet is the members scope names, before RetrySet leaves out those
// that could never run, ascending.
func scopeSet(nodes []RetryNode, scope job.WorkflowRetryScope) []job.ID {
	var out []job.ID
	switch scope {
	case job.RetryAll:
		for _, n := range nodes {
			if n.State.Terminal() {
				out = append(out, n.ID)
			}
		}
	case job.RetryFailed:
		for _, n := range nodes {
			if job.WorkflowFailedMember(n.State, n.CancelCause) {
				out = append(out, n.ID)
			}
		}
	case job.RetryFailedAndDownstream:
		dependents := make(map[job.ID][]int, len(nodes))
		for i, n := range nodes {
			for _, p := range n.Parents {
				dependents[p] = append(dependents[p], i)
			}
		}
		seen := make([]bool, len(nodes))
		var stack []int
		for i, n := range nodes {
			if job.WorkflowFailedMember(n.State, n.CancelCause) {
				seen[i] = true
				stack = append(stack, i)
			}
		}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, d := range dependents[nodes[i].ID] {
				if !seen[d] {
					seen[d] = true
					stack = append(stack, d)
				}
			}
		}
		for i, n := range nodes {
			if seen[i] && n.State.Terminal() {
				out = append(out, n.ID)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Recount is the exact recount of a latch after a retry: given whether each
// parent is live once the retry has applied (reanimated by it, or live
// already), it returns which edges are counted — exactly those from a
// terminal parent — and how many are not.
func Recount(parentLive []bool) (counted []bool, pending int) {
	counted = make([]bool, len(parentLive))
	for i, live := range parentLive {
		counted[i] = !live
		if live {
			pending++
		}
	}
	return counted, pending
}

// ReanimatedState is where a reanimated job goes: Awaiting Parent while its
// recounted latch has a parent pending, Scheduled (due at once) otherwise.
// No retried dependent can therefore run before its retried parent has
// ended again.
func ReanimatedState(pending int) job.State {
	if pending > 0 {
		return job.StateAwaitingParent
	}
	return job.StateScheduled
}

// Reanimate resets a terminal job j for its new life after a Workflow
// Retry at now, as a requeue does and more: a fresh attempt budget of
// MaxAttempts tries above the Attempt it reached (AttemptBase = Attempt;
// the Attempt itself is kept, never reused), no Retry Cause (the job starts
// over), no cancel cause or cancel request, no Lease, no FinalizedAt, due
// at now. The state is the caller's to move along the ViaWorkflowRetry
// edge (ReanimatedState); Job Output is the store's to drop.
func Reanimate(j *job.Job, now time.Time) {
	j.AttemptBase = j.Attempt
	j.RetryCause = job.RetryCauseNone
	j.CancelCause = job.CancelCauseNone
	j.CancelRequested = false
	j.Worker = ""
	j.LeaseExpiresAt = time.Time{}
	j.FinalizedAt = time.Time{}
	j.ScheduledAt = now
}
