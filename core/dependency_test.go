package core_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// Glossary, Dependency: "Two reaction modes only: on-success (default) and
// on-any-terminal"; Cancelled: "a recorded cause: parent failure
// (on-success Dependencies)".
func TestParentFails(t *testing.T) {
	t.Parallel()
	for _, st := range append([]job.State{job.StateUnknown}, job.States...) {
		wantOnSuccess := st == job.StateDeadLettered || st == job.StateCancelled || st == job.StateQuarantined
		if got := core.ParentFails(job.DependencyOnSuccess, st); got != wantOnSuccess {
			t.Errorf("ParentFails(on_success, %s) = %v, want %v", st, got, wantOnSuccess)
		}
		if core.ParentFails(job.DependencyOnAnyTerminal, st) {
			t.Errorf("ParentFails(on_any_terminal, %s) = true: that mode is never failed", st)
		}
	}
}

// Glossary, Awaiting Parent and Dependency: the latch counts down; at zero
// the dependent becomes Scheduled; an on-success dependent of a failed
// parent is Cancelled whatever remains.
func TestAfterParent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode      job.DependencyMode
		parent    job.State
		remaining int
		to        job.State
		via       core.Via
		moved     bool
	}{
		{job.DependencyOnSuccess, job.StateSucceeded, 2, job.StateAwaitingParent, 0, false},
		{job.DependencyOnSuccess, job.StateSucceeded, 0, job.StateScheduled, core.ViaRelease, true},
		{job.DependencyOnSuccess, job.StateDeadLettered, 3, job.StateCancelled, core.ViaParentFailure, true},
		{job.DependencyOnSuccess, job.StateCancelled, 0, job.StateCancelled, core.ViaParentFailure, true},
		{job.DependencyOnSuccess, job.StateQuarantined, 1, job.StateCancelled, core.ViaParentFailure, true},
		{job.DependencyOnAnyTerminal, job.StateDeadLettered, 1, job.StateAwaitingParent, 0, false},
		{job.DependencyOnAnyTerminal, job.StateCancelled, 0, job.StateScheduled, core.ViaRelease, true},
		{job.DependencyOnAnyTerminal, job.StateQuarantined, 0, job.StateScheduled, core.ViaRelease, true},
		{job.DependencyOnAnyTerminal, job.StateSucceeded, 0, job.StateScheduled, core.ViaRelease, true},
	}
	for _, c := range cases {
		to, via, moved := core.AfterParent(c.mode, c.parent, c.remaining)
		if to != c.to || via != c.via || moved != c.moved {
			t.Errorf("AfterParent(%s, %s, %d) = %s, %s, %v; want %s, %s, %v",
				c.mode, c.parent, c.remaining, to, via, moved, c.to, c.via, c.moved)
		}
		if moved {
			if err := core.CheckEdge(job.StateAwaitingParent, to, via); err != nil {
				t.Errorf("AfterParent(%s, %s, %d) takes an illegal edge: %v", c.mode, c.parent, c.remaining, err)
			}
		}
	}
}

func TestReleasedDueAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct{ scheduled, want time.Time }{
		{now.Add(-time.Hour), now},
		{now, now},
		{now.Add(time.Hour), now.Add(time.Hour)},
	} {
		if got := core.ReleasedDueAt(c.scheduled, now); !got.Equal(c.want) {
			t.Errorf("ReleasedDueAt(%v, now) = %v, want %v", c.scheduled, got, c.want)
		}
	}
}

func TestDependencyOrderErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		parents [][]int
		cycle   []int // nil: a non-cycle error
	}{
		{"self-edge", [][]int{nil, {1}}, []int{1, 1}},
		{"two-cycle", [][]int{{1}, {0}}, []int{1, 0, 1}},
		{"three-cycle behind a free job", [][]int{nil, {3}, {1}, {2}}, []int{1, 2, 3, 1}},
		{"out of range", [][]int{{5}}, nil},
		{"negative", [][]int{{-1}}, nil},
	}
	for _, c := range cases {
		_, err := core.DependencyOrder(c.parents)
		var ce *core.CycleError
		switch {
		case err == nil:
			t.Errorf("%s: no error", c.name)
		case c.cycle == nil && errors.As(err, &ce):
			t.Errorf("%s: cycle error %v, want a range error", c.name, err)
		case c.cycle != nil && !errors.As(err, &ce):
			t.Errorf("%s: error %v is not a *CycleError", c.name, err)
		case c.cycle != nil:
			if !isRotation(ce.Cycle, c.cycle) {
				t.Errorf("%s: cycle %v, want %v (any rotation)", c.name, ce.Cycle, c.cycle)
			}
		}
	}
}

// isRotation reports whether closed cycles a and b (first element repeated
// last) are the same cycle.
func isRotation(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	ring := a[:len(a)-1]
	for s := range ring {
		rot := append(slices.Clone(ring[s:]), ring[:s]...)
		if slices.Equal(append(rot, rot[0]), b) {
			return true
		}
	}
	return false
}

// DependencyOrder against a deliberately simple twin: a batch has a cycle
// exactly when some job reaches itself through parent edges (transitive
// closure), and otherwise the order places every parent first and keeps
// unconstrained jobs in input order.
func TestDependencyOrderTwin(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 9))
	for iter := range 3000 {
		n := 1 + rng.IntN(8)
		parents := make([][]int, n)
		edges := rng.IntN(2 * n)
		for range edges {
			i, p := rng.IntN(n), rng.IntN(n)
			if iter%3 != 0 && p >= i { // mostly acyclic batches
				continue
			}
			parents[i] = append(parents[i], p)
		}
		reach := closure(parents)
		cyclic := false
		for i := range n {
			cyclic = cyclic || reach[i][i]
		}
		order, err := core.DependencyOrder(parents)
		if cyclic {
			var ce *core.CycleError
			if !errors.As(err, &ce) {
				t.Fatalf("parents %v: cyclic, got order %v err %v", parents, order, err)
			}
			for k := 0; k+1 < len(ce.Cycle); k++ {
				if !slices.Contains(parents[ce.Cycle[k+1]], ce.Cycle[k]) {
					t.Fatalf("parents %v: cycle %v names a non-edge %d→%d", parents, ce.Cycle, ce.Cycle[k], ce.Cycle[k+1])
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("parents %v: acyclic, got %v", parents, err)
		}
		pos := make([]int, n)
		seen := make([]bool, n)
		for k, i := range order {
			if seen[i] {
				t.Fatalf("parents %v: order %v repeats %d", parents, order, i)
			}
			seen[i], pos[i] = true, k
		}
		if len(order) != n {
			t.Fatalf("parents %v: order %v misses jobs", parents, order)
		}
		for i, ps := range parents {
			for _, p := range ps {
				if pos[p] > pos[i] {
					t.Fatalf("parents %v: order %v puts parent %d after %d", parents, order, p, i)
				}
			}
		}
		if edges == 0 && !slices.Equal(order, identity(n)) {
			t.Fatalf("no edges: order %v, want input order", order)
		}
	}
}

func closure(parents [][]int) [][]bool {
	n := len(parents)
	r := make([][]bool, n)
	for i := range r {
		r[i] = make([]bool, n)
		for _, p := range parents[i] {
			r[i][p] = true
		}
	}
	for k := range n {
		for i := range n {
			for j := range n {
				r[i][j] = r[i][j] || r[i][k] && r[k][j]
			}
		}
	}
	return r
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
