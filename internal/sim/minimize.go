package sim

import (
	"errors"
	"fmt"
)

// ErrNotReproduced is returned by Minimize when the Plan does not trip the
// target invariant on replay.
var ErrNotReproduced = errors.New("sim: the plan does not reproduce the failure")

// MinimizeOptions bound the Seed Minimizer.
type MinimizeOptions struct {
	// MaxRuns caps the replays (0: 2000).
	MaxRuns int
	// Progress, if set, receives a line after each accepted shrink.
	Progress func(line string)
}

// Minimized is the Seed Minimizer's result.
type Minimized struct {
	// Plan is the smallest Plan found that still trips the invariant; the
	// original is untouched.
	Plan Plan
	// Failure is what Plan trips on replay.
	Failure *Failure
	// Before and After are the Fault Map sizes.
	Before, After int
	// Runs is how many replays the search took.
	Runs int
}

// Minimize is the Seed Minimizer: it removes faults from the Fault Map of a
// failing Plan while the same invariant — matched by its stable identity
// (Failure.Same), never by message, seed or time — still trips. Removal only
// calms a run, so the result is an exact repro with fewer faults. The search
// tries no faults at all, then whole fault kinds, then delta debugging over
// the remaining entries, then single entries. The Plan is replayed as is
// (a discovery Plan is first run to record its Fault Map); target, if nil,
// is whatever the Plan trips.
func Minimize(p Plan, target *Failure, opts MinimizeOptions) (Minimized, error) {
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = 2000
	}
	m := &minimizer{opts: opts}
	rep, fail := m.try(p)
	if fail == nil || (target != nil && !fail.Same(target)) {
		return Minimized{}, fmt.Errorf("%w: replay gave %v", ErrNotReproduced, fail)
	}
	target = fail
	best := rep.Plan
	m.target, m.best, m.fail = target, best, fail
	before := best.Faults.Len()

	m.accept(withFaults(best, FaultMap{}), "no faults")
	if m.best.Faults.Len() > 0 {
		m.kinds()
		m.ddmin()
	}
	return Minimized{Plan: m.best, Failure: m.fail, Before: before, After: m.best.Faults.Len(), Runs: m.runs}, nil
}

type minimizer struct {
	opts   MinimizeOptions
	target *Failure
	best   Plan
	fail   *Failure
	runs   int
}

func withFaults(p Plan, m FaultMap) Plan {
	p.Discover = false
	p.Faults = m
	return p
}

// try replays a Plan and returns what it tripped.
func (m *minimizer) try(p Plan) (Report, *Failure) {
	m.runs++
	rep, err := Run(p)
	var f *Failure
	if errors.As(err, &f) {
		return rep, f
	}
	return rep, nil
}

// accept replays candidate and keeps it if it trips the target.
func (m *minimizer) accept(candidate Plan, what string) bool {
	if m.runs >= m.opts.MaxRuns {
		return false
	}
	_, f := m.try(candidate)
	if !f.Same(m.target) {
		return false
	}
	m.best, m.fail = candidate, f
	if m.opts.Progress != nil {
		m.opts.Progress(fmt.Sprintf("kept %d faults (%s) after %d replays", candidate.Faults.Len(), what, m.runs))
	}
	return true
}

// kinds tries dropping each fault kind whole.
func (m *minimizer) kinds() {
	for _, drop := range []string{"hints", "ops", "skews", "restarts", "isolations", "crashes"} {
		f := m.best.Faults.Clone()
		switch drop {
		case "hints":
			f.Hints = nil
		case "ops":
			f.Ops = nil
		case "skews":
			f.Skews = nil
		case "isolations":
			f.Isolations = nil
		case "crashes":
			f.Crashes = nil
		case "restarts":
			f.Restarts = nil
		}
		if f.Len() < m.best.Faults.Len() {
			m.accept(withFaults(m.best, f), "without "+drop)
		}
	}
}

// ddmin is delta debugging over the Fault Map's entries: remove chunks while
// the failure persists, refining the chunks down to single entries.
func (m *minimizer) ddmin() {
	n := 2
	for {
		size := m.best.Faults.Len()
		if size == 0 || m.runs >= m.opts.MaxRuns {
			return
		}
		n = min(n, size)
		removed := false
		for c := 0; c < n; c++ {
			lo, hi := c*size/n, (c+1)*size/n
			cand := m.best.Faults.Keep(func(i int) bool { return i < lo || i >= hi })
			if m.accept(withFaults(m.best, cand), fmt.Sprintf("chunk %d/%d", c+1, n)) {
				removed = true
				n = max(n-1, 2)
				break
			}
		}
		if removed {
			continue
		}
		if n >= size {
			return
		}
		n = min(2*n, size)
	}
}

// ShrinkScenario is the coarse, opt-in Scenario pass of the Seed Minimizer:
// it tries fewer jobs, fewer nodes and a quieter workload, keeping each
// change that still trips the same invariant. It may surface a sibling bug
// and never replaces the exact repro Minimize returns.
func ShrinkScenario(p Plan, target *Failure, opts MinimizeOptions) (Minimized, error) {
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = 200
	}
	m := &minimizer{opts: opts}
	p.Discover = false
	rep, fail := m.try(p)
	if fail == nil || (target != nil && !fail.Same(target)) {
		return Minimized{}, fmt.Errorf("%w: replay gave %v", ErrNotReproduced, fail)
	}
	m.target, m.best, m.fail = fail, rep.Plan, fail
	before := m.best.Faults.Len()
	for changed := true; changed && m.runs < opts.MaxRuns; {
		changed = false
		sc := m.best.Scenario
		if sc.Work.Jobs > 1 {
			c := m.best
			c.Scenario.Work.Jobs = sc.Work.Jobs / 2
			changed = m.accept(c, fmt.Sprintf("%d jobs", c.Scenario.Work.Jobs)) || changed
		}
		if len(sc.Nodes) > 1 {
			c := m.best
			last := len(sc.Nodes) - 1
			c.Scenario.Nodes = sc.Nodes[:last:last]
			c.Faults = c.Faults.Keep(faultNodeBelow(&c.Faults, last))
			changed = m.accept(c, fmt.Sprintf("%d nodes", last)) || changed
		}
		for _, quiet := range []func(*Workload) bool{
			func(w *Workload) bool { ok := w.QueueActions > 0; w.QueueActions = 0; return ok },
			func(w *Workload) bool { ok := w.Deploys > 0; w.Deploys = 0; return ok },
			func(w *Workload) bool { ok := w.CancelProb > 0; w.CancelProb = 0; return ok },
			func(w *Workload) bool { ok := w.FutureProb > 0; w.FutureProb = 0; return ok },
			func(w *Workload) bool { ok := w.Graphs.Graphs > 0; w.Graphs = GraphWork{}; return ok },
		} {
			c := m.best
			if quiet(&c.Scenario.Work) {
				changed = m.accept(c, "quieter workload") || changed
			}
		}
	}
	return Minimized{Plan: m.best, Failure: m.fail, Before: before, After: m.best.Faults.Len(), Runs: m.runs}, nil
}

// faultNodeBelow keeps the faults that act on nodes below n.
func faultNodeBelow(m *FaultMap, n int) func(int) bool {
	var nodes []int
	for _, f := range m.Crashes {
		nodes = append(nodes, f.Node)
	}
	for _, f := range m.Isolations {
		nodes = append(nodes, f.Node)
	}
	for _, f := range m.Skews {
		nodes = append(nodes, f.Node)
	}
	for _, f := range m.Hints {
		nodes = append(nodes, max(f.Node, f.Source.Node))
	}
	for _, f := range m.Ops {
		nodes = append(nodes, f.Op.Node)
	}
	for range m.Restarts {
		nodes = append(nodes, 0)
	}
	return func(i int) bool { return nodes[i] < n }
}
