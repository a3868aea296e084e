package store

import (
	"slices"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// RetryMember is one member of a Workflow as a Workflow Retry reads it: its
// id, state, cancel cause and parents, all members of the same Workflow.
type RetryMember struct {
	ID          job.ID
	State       job.State
	CancelCause job.CancelCause
	Mode        job.DependencyMode
	Parents     []job.ID // ascending
}

// RetryPlan is what a Workflow Retry writes, worked out by PlanWorkflowRetry
// from the members as read inside the retry's own transaction, so an SQL
// adapter applies it set-based and decides nothing itself.
type RetryPlan struct {
	// Reanimated are the members the retry moves along a
	// core.ViaWorkflowRetry edge, ascending, each with its new state and
	// pending count; each is reset as core.Reanimate says.
	Reanimated []RetryMove
	// Recounted are the Awaiting-Parent members not reanimated whose
	// latches gain a pending parent, with their new pending count.
	Recounted []RetryMove
	// Edges are the new counted flag of every edge into a member of
	// Reanimated or Recounted.
	Edges []RetryEdge
}

// RetryMove is one member's move in a RetryPlan.
type RetryMove struct {
	ID       job.ID
	From, To job.State
	Pending  int
}

// RetryEdge is one recounted Dependency edge.
type RetryEdge struct {
	Job, Parent job.ID
	Counted     bool
}

// IDs returns the ids of the moves.
func (p RetryPlan) IDs() []job.ID {
	out := make([]job.ID, len(p.Reanimated))
	for i, m := range p.Reanimated {
		out[i] = m.ID
	}
	return out
}

// PlanWorkflowRetry works out a Workflow Retry of scope over members (any
// order): which members it reanimates (core.RetrySet), and the exact latch
// recount (core.Recount) of each of them and of every Awaiting-Parent
// member with a reanimated parent, against the parents' states after the
// retry. The In-Memory Store applies the same rules one member at a time.
func PlanWorkflowRetry(members []RetryMember, scope job.WorkflowRetryScope) RetryPlan {
	nodes := make([]core.RetryNode, len(members))
	byID := make(map[job.ID]*RetryMember, len(members))
	for i := range members {
		m := &members[i]
		nodes[i] = core.RetryNode{ID: m.ID, State: m.State, CancelCause: m.CancelCause, Mode: m.Mode, Parents: m.Parents}
		byID[m.ID] = m
	}
	set := core.RetrySet(nodes, scope)
	inSet := make(map[job.ID]bool, len(set))
	for _, id := range set {
		inSet[id] = true
	}
	liveAfter := func(id job.ID) bool {
		p := byID[id]
		return inSet[id] || p != nil && p.State.Live()
	}
	var plan RetryPlan
	recount := func(m *RetryMember) int {
		live := make([]bool, len(m.Parents))
		for i, p := range m.Parents {
			live[i] = liveAfter(p)
		}
		counted, pending := core.Recount(live)
		for i, p := range m.Parents {
			plan.Edges = append(plan.Edges, RetryEdge{Job: m.ID, Parent: p, Counted: counted[i]})
		}
		return pending
	}
	for _, id := range set {
		m := byID[id]
		pending := recount(m)
		plan.Reanimated = append(plan.Reanimated, RetryMove{ID: id, From: m.State, To: core.ReanimatedState(pending), Pending: pending})
	}
	ids := make([]job.ID, 0, len(members))
	for _, m := range members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := byID[id]
		if inSet[id] || m.State != job.StateAwaitingParent || !slices.ContainsFunc(m.Parents, func(p job.ID) bool { return inSet[p] }) {
			continue
		}
		plan.Recounted = append(plan.Recounted, RetryMove{ID: id, From: m.State, To: m.State, Pending: recount(m)})
	}
	return plan
}
