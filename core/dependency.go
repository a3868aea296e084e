package core

import (
	"container/heap"
	"fmt"
	"strings"
	"time"

	"github.com/backwave/backwave/job"
)

// The Dependency latch, as rules. A dependent is a job inserted with a
// parent set and a job.DependencyMode. Each (parent, dependent) edge is
// counted by the dependent's latch exactly once: when the parent first
// reaches a terminal state, or at the dependent's insert if the parent is
// terminal already. A store applies the count atomically with whatever made
// the parent terminal — a fenced outcome, a lease expiry or Relinquish that
// dead-letters, an operator cancel, a cascade — and a stale outcome, which
// makes nothing terminal, counts nothing. A parent that an operator later
// requeues and that ends terminal again counts no edge twice.
//
// Counting one edge moves the dependent as AfterParent says. Only a
// dependent that is still Awaiting Parent reacts: a Cancelled dependent is
// never un-cancelled by any automatic path. A dependent cancelled by a
// parent failure is itself a terminal parent, so the rules apply to its own
// dependents in turn, down the graph.
//
// The In-Memory Store applies these rules one edge at a time; the SQL
// adapters restate them set-based (a recursive query for the cascade), and
// the Conformance Suite holds both to the same results.

// ParentFails reports whether a parent that reached state parent fails a
// dependent of mode m: the dependent runs only after successful parents and
// this one ended terminal without succeeding — Dead-Lettered, Cancelled or
// Quarantined. A Quarantined parent never ran to success (its job could not
// be routed or decoded), so it fails an on-success dependent; an operator
// may requeue it later, but the dependent it cancelled stays Cancelled. A
// live state fails nothing.
func ParentFails(m job.DependencyMode, parent job.State) bool {
	return m == job.DependencyOnSuccess && parent.Terminal() && parent != job.StateSucceeded
}

// AfterParent returns where an Awaiting-Parent dependent of mode m goes when
// its latch counts one more parent, which reached state parent, leaving
// remaining parents uncounted:
//   - the parent fails it (ParentFails): Cancelled by ViaParentFailure,
//     with cancel cause parent failure, whatever remains;
//   - no parent remains: Scheduled by ViaRelease, due at ReleasedDueAt;
//   - otherwise it keeps waiting, and moved is false.
func AfterParent(m job.DependencyMode, parent job.State, remaining int) (to job.State, via Via, moved bool) {
	switch {
	case ParentFails(m, parent):
		return job.StateCancelled, ViaParentFailure, true
	case remaining <= 0:
		return job.StateScheduled, ViaRelease, true
	default:
		return job.StateAwaitingParent, 0, false
	}
}

// ReleasedDueAt is the due time of a dependent its latch released at now:
// at once, unless the dependent was enqueued to run no earlier than a later
// time, which it keeps.
func ReleasedDueAt(scheduledAt, now time.Time) time.Time {
	if scheduledAt.After(now) {
		return scheduledAt
	}
	return now
}

// InsertState is the state a job is inserted in: Awaiting Parent if it names
// parents (even parents that are terminal already: their count follows at
// once, in the same step), Scheduled otherwise.
func InsertState(parents int) job.State {
	if parents > 0 {
		return job.StateAwaitingParent
	}
	return job.StateScheduled
}

// CycleError reports Dependency edges among the jobs of one insert that
// close a cycle, so no order runs every parent before its dependents. A
// self-edge is a cycle of one job.
type CycleError struct {
	// Cycle lists batch indexes along the cycle, each a parent of the next,
	// with the first repeated at the end: [2 5 2] means job 2 is a parent of
	// job 5 and job 5 a parent of job 2; [3 3] is a self-edge.
	Cycle []int
}

// Error names the cycle by batch index.
func (e *CycleError) Error() string {
	parts := make([]string, len(e.Cycle))
	for i, n := range e.Cycle {
		parts[i] = fmt.Sprintf("job %d", n)
	}
	if len(e.Cycle) == 2 {
		return fmt.Sprintf("job %d names itself as a parent", e.Cycle[0])
	}
	return "dependency cycle: " + strings.Join(parts, " → ")
}

// DependencyOrder returns the order in which to insert a batch of n =
// len(parents) new jobs so that every parent comes before its dependents:
// parents[i] lists the batch indexes of job i's parents. Among jobs free to
// go, the smallest index goes first, so a batch without edges between its
// jobs keeps its input order. Edges that close a cycle (a self-edge
// included) return a *CycleError; an index outside the batch returns an
// error naming it.
func DependencyOrder(parents [][]int) ([]int, error) {
	n := len(parents)
	waiting := make([]int, n)      // uncounted in-batch parents per job
	dependents := make([][]int, n) // in-batch dependents per job
	for i, ps := range parents {
		for _, p := range ps {
			if p < 0 || p >= n {
				return nil, fmt.Errorf("job %d names batch index %d as a parent; the batch has %d jobs", i, p, n)
			}
			if p == i {
				return nil, &CycleError{Cycle: []int{i, i}}
			}
			waiting[i]++
			dependents[p] = append(dependents[p], i)
		}
	}
	ready := &intHeap{}
	for i := range n {
		if waiting[i] == 0 {
			heap.Push(ready, i)
		}
	}
	order := make([]int, 0, n)
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		order = append(order, i)
		for _, d := range dependents[i] {
			if waiting[d]--; waiting[d] == 0 {
				heap.Push(ready, d)
			}
		}
	}
	if len(order) == n {
		return order, nil
	}
	return nil, &CycleError{Cycle: findCycle(parents, waiting)}
}

// findCycle walks parent edges among the jobs DependencyOrder could not
// place (each still waits for a parent that is itself unplaced) until a job
// repeats, and returns the cycle in parent-to-dependent order.
func findCycle(parents [][]int, waiting []int) []int {
	start := -1
	for i, w := range waiting {
		if w > 0 {
			start = i
			break
		}
	}
	seen := make(map[int]int) // job → position in path
	var path []int
	for at := start; ; {
		if pos, ok := seen[at]; ok {
			cycle := append([]int(nil), path[pos:]...)
			// path follows parents (dependent → parent); reverse it to read
			// parent → dependent, and close the loop.
			for l, r := 0, len(cycle)-1; l < r; l, r = l+1, r-1 {
				cycle[l], cycle[r] = cycle[r], cycle[l]
			}
			return append(cycle, cycle[0])
		}
		seen[at] = len(path)
		path = append(path, at)
		next := -1
		for _, p := range parents[at] {
			if waiting[p] > 0 {
				next = p
				break
			}
		}
		if next < 0 {
			// Unreachable: an unplaced job always waits on an unplaced
			// parent.
			panic(fmt.Sprintf("core: job %d is unplaced but waits on no unplaced parent", at))
		}
		at = next
	}
}

// intHeap is a min-heap of batch indexes.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
