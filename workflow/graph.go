package workflow

import (
	"github.com/backwave/backwave"
)

// Failed reports whether a member's state counts as a failure of its
// Workflow: Dead-Lettered or Quarantined.
func Failed(s backwave.JobState) bool {
	return s == backwave.StateDeadLettered || s == backwave.StateQuarantined
}

// FailedPath returns the members of d on its failed path: every failed
// member (Dead-Lettered or Quarantined) and every member downstream of one
// that the failure cancelled (Cancelled with cause parent failure, through
// a chain of such members). It is what the CLI and the dashboard highlight;
// it is empty for a Workflow nothing failed in.
func FailedPath(d backwave.WorkflowDetail) map[backwave.JobID]bool {
	children := make(map[backwave.JobID][]int, len(d.Members))
	for i, m := range d.Members {
		for _, p := range m.Parents {
			children[p] = append(children[p], i)
		}
	}
	path := make(map[backwave.JobID]bool)
	var stack []backwave.JobID
	for _, m := range d.Members {
		if Failed(m.Job.State) {
			path[m.Job.ID] = true
			stack = append(stack, m.Job.ID)
		}
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range children[id] {
			m := d.Members[c]
			if path[m.Job.ID] || m.Job.State != backwave.StateCancelled || m.Job.CancelCause != backwave.CancelCauseParentFailure {
				continue
			}
			path[m.Job.ID] = true
			stack = append(stack, m.Job.ID)
		}
	}
	return path
}

// Depths returns each member's depth in d's graph, by index in d.Members:
// 0 for a member without parents in d, else one more than its deepest
// parent's. Members come in ascending id order and a parent is always
// inserted before its dependents, but Depths does not rely on it: it
// iterates to a fixed point, and a parent outside d counts as none.
func Depths(d backwave.WorkflowDetail) []int {
	index := make(map[backwave.JobID]int, len(d.Members))
	for i, m := range d.Members {
		index[m.Job.ID] = i
	}
	depth := make([]int, len(d.Members))
	for changed, rounds := true, 0; changed && rounds <= len(d.Members); rounds++ {
		changed = false
		for i, m := range d.Members {
			for _, p := range m.Parents {
				if pi, ok := index[p]; ok && depth[pi]+1 > depth[i] {
					depth[i] = depth[pi] + 1
					changed = true
				}
			}
		}
	}
	return depth
}

// Label returns the label of a member in a graph view: its Wire Name, and
// "#" and its Step name when the builder gave it one ("images.resize#0").
func Label(j backwave.JobInfo) string { return stepKey(j.WireName, memberName(j.Payload)) }
