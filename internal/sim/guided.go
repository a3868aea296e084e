package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// Mutate returns a neighbour of p for the Coverage-Guided Swarm. Half the
// time it mutates the Swarm configuration — switching a fault kind on or off
// or rescaling one, always inside the Fault Level's envelope — and returns a
// discovery Plan that draws fresh faults under it; otherwise it edits the
// Fault Map directly (drops, shifts, stretches, copies or adds entries) and
// returns a replay Plan. It never touches the workload or any payload: this
// is not fuzzing. r is the caller's seeded generator.
func Mutate(p Plan, r *rand.Rand) Plan {
	p.Scenario.Nodes = append([]NodeSpec(nil), p.Scenario.Nodes...)
	p.Scenario.Queues = append([]QueueSpec(nil), p.Scenario.Queues...)
	if len(kindsAt(p.Scenario.Level)) == 0 {
		return p // Pristine: nothing to mutate
	}
	if p.Discover || r.IntN(2) == 0 {
		p.Scenario.Swarm = mutateSwarm(p.Scenario.Swarm, p.Scenario.Level, r)
		p.Discover = true
		p.Faults = FaultMap{}
		return p
	}
	p.Faults = mutateFaults(p.Faults.Clone(), &p.Scenario, r)
	return p
}

func mutateSwarm(s Swarm, level Level, r *rand.Rand) Swarm {
	kinds := kindsAt(level)
	k := kinds[r.IntN(len(kinds))]
	f := s.kind(k)
	switch {
	case !f.On():
		*f = drawFault(newDraw(r.Uint64()), k)
	case r.IntN(3) == 0:
		*f = Fault{}
	default:
		f.Probability *= math.Exp2(r.Float64()*4 - 2)
		if k == "hint" || k == "latency" || k == "unknown" || k == "loss" {
			f.Probability = min(f.Probability, 0.95)
		}
		if f.Stability > 0 {
			f.Stability = Dur(float64(f.Stability) * math.Exp2(r.Float64()*4-2)).round()
		}
	}
	s.Shape = "guided"
	return s
}

func (d Dur) round() Dur { return Dur(time.Duration(d).Round(time.Microsecond)) }

func mutateFaults(m FaultMap, sc *Scenario, r *rand.Rand) FaultMap {
	shift := func(d Dur) Dur {
		v := d.D() + time.Duration(r.Int64N(int64(2*time.Second))) - time.Second
		return Dur(clampDur(v, 0, sc.Chaos.D()-time.Millisecond).Round(time.Millisecond))
	}
	switch r.IntN(8) {
	case 0: // drop one entry
		if n := m.Len(); n > 0 {
			drop := r.IntN(n)
			return m.Keep(func(i int) bool { return i != drop })
		}
	case 1: // drop about half
		return m.Keep(func(int) bool { return r.IntN(2) == 0 })
	case 2: // move an episode
		switch {
		case len(m.Isolations) > 0 && r.IntN(2) == 0:
			f := &m.Isolations[r.IntN(len(m.Isolations))]
			f.At = shift(f.At)
		case len(m.Crashes) > 0:
			f := &m.Crashes[r.IntN(len(m.Crashes))]
			f.At = shift(f.At)
		}
	case 3: // stretch an episode
		switch {
		case len(m.Isolations) > 0 && r.IntN(2) == 0:
			f := &m.Isolations[r.IntN(len(m.Isolations))]
			f.For = Dur(max(f.For.D(), time.Millisecond) * 2)
			f.Withhold = r.IntN(2) == 0
		case len(m.Crashes) > 0:
			f := &m.Crashes[r.IntN(len(m.Crashes))]
			f.Down = Dur(max(f.Down.D(), time.Millisecond) * 2)
		}
	case 4: // copy an isolation or crash to another node
		n := r.IntN(len(sc.Nodes))
		switch {
		case len(m.Isolations) > 0 && r.IntN(2) == 0:
			f := m.Isolations[r.IntN(len(m.Isolations))]
			f.Node, f.Episode = n, 1<<16+len(m.Isolations)
			m.Isolations = append(m.Isolations, f)
		case len(m.Crashes) > 0:
			f := m.Crashes[r.IntN(len(m.Crashes))]
			f.Node, f.Episode = n, 1<<16+len(m.Crashes)
			m.Crashes = append(m.Crashes, f)
		}
	case 5: // a new isolation episode
		n := r.IntN(len(sc.Nodes))
		m.Isolations = append(m.Isolations, IsolationFault{
			Node: n, Episode: 1<<17 + len(m.Isolations),
			At:       shift(Dur(r.Int64N(int64(sc.Chaos)))),
			For:      Dur(time.Duration(r.Int64N(int64(3 * sc.Lease.D())))).round(),
			Withhold: r.IntN(2) == 0,
		})
	case 6: // hide the outcome of an operation next to one already faulty
		if len(m.Ops) > 0 {
			f := m.Ops[r.IntN(len(m.Ops))]
			f.Op.Op += uint64(1 + r.IntN(3))
			f.Unknown = []Unknown{UnknownApplied, UnknownLost}[r.IntN(2)]
			m.Ops = append(m.Ops, f)
		}
	case 7: // change what a hint fault does
		if len(m.Hints) > 0 {
			f := &m.Hints[r.IntN(len(m.Hints))]
			f.Mode = []HintMode{HintDrop, HintDuplicate, HintDelay}[r.IntN(3)]
		}
	}
	m.dedupe()
	return m
}

// dedupe keeps the first entry per identity.
func (m *FaultMap) dedupe() {
	seenOp := map[OpRef]bool{}
	ops := m.Ops[:0]
	for _, f := range m.Ops {
		if !seenOp[f.Op] {
			seenOp[f.Op] = true
			ops = append(ops, f)
		}
	}
	m.Ops = ops
}
