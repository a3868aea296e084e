package sim

import (
	"time"
)

// drawEpisodes draws the episode faults of a discovery run — crashes,
// isolations, clock skew and, under Adversarial, permanent loss — into m.
// Each node's episodes are a pure function of (seed, kind, node, episode).
func drawEpisodes(sc *Scenario, m *FaultMap) {
	chaos := sc.Chaos.D()
	sw := &sc.Swarm
	spared := -1
	if sw.Loss.On() {
		spared = 0 // node 0 serves every Queue, so every job keeps a path to progress
	}
	if f := sw.Restart; f.On() {
		d := newDraw(sc.Seed, tagRestart)
		t := time.Duration(0)
		for k := 0; ; k++ {
			t += d.exp(time.Duration(float64(time.Second) / f.Probability)).Round(time.Millisecond)
			if t >= chaos {
				break
			}
			down := clampDur(d.exp(f.Stability.D()).Round(time.Millisecond), 0, 4*f.Stability.D())
			m.Restarts = append(m.Restarts, RestartFault{Episode: k, At: Dur(t), Down: Dur(down)})
			t += down
		}
	}
	for n := range sc.Nodes {
		if f := sw.Crash; f.On() {
			d := newDraw(sc.Seed, tagCrash, uint64(n))
			t := time.Duration(0)
			for k := 0; ; k++ {
				t += d.exp(time.Duration(float64(time.Second) / f.Probability)).Round(time.Millisecond)
				if t >= chaos {
					break
				}
				down := clampDur(d.exp(f.Stability.D()).Round(time.Millisecond), time.Millisecond, 4*f.Stability.D())
				m.Crashes = append(m.Crashes, CrashFault{Node: n, Episode: k, At: Dur(t), Down: Dur(down)})
				t += down
			}
		}
		if f := sw.Isolation; f.On() {
			d := newDraw(sc.Seed, tagIsolation, uint64(n))
			t := time.Duration(0)
			for k := 0; ; k++ {
				t += d.exp(time.Duration(float64(time.Second) / f.Probability)).Round(time.Millisecond)
				if t >= chaos {
					break
				}
				span := clampDur(d.exp(f.Stability.D()).Round(time.Millisecond), time.Millisecond, 4*f.Stability.D())
				m.Isolations = append(m.Isolations, IsolationFault{Node: n, Episode: k, At: Dur(t), For: Dur(span), Withhold: d.chance(0.5)})
				t += span
			}
		}
		if f := sw.Skew; f.On() {
			d := newDraw(sc.Seed, tagSkew, uint64(n))
			t := time.Duration(0)
			for k := 0; ; k++ {
				t += d.exp(time.Duration(float64(time.Second) / f.Probability)).Round(time.Millisecond)
				if t >= chaos {
					break
				}
				off := d.dur(-f.Stability.D(), f.Stability.D()).Round(time.Microsecond)
				m.Skews = append(m.Skews, SkewFault{Node: n, Episode: k, At: Dur(t), Offset: Dur(off)})
			}
		}
		if f := sw.Loss; f.On() && n != spared {
			d := newDraw(sc.Seed, tagLoss, uint64(n))
			if d.chance(f.Probability) {
				at := d.dur(chaos/10, chaos*9/10).Round(time.Millisecond)
				if d.chance(0.5) {
					m.Crashes = append(m.Crashes, CrashFault{Node: n, Episode: 1 << 20, At: Dur(at), Permanent: true})
				} else {
					m.Isolations = append(m.Isolations, IsolationFault{Node: n, Episode: 1 << 20, At: Dur(at), Withhold: d.chance(0.5), Permanent: true})
				}
			}
		}
	}
}

func clampDur(d, lo, hi time.Duration) time.Duration {
	return max(lo, min(d, hi))
}

// drawOpFault draws the fault of one store operation in a discovery run; ok
// is false when none applies.
func drawOpFault(sc *Scenario, ref OpRef) (f OpFault, ok bool) {
	sw := &sc.Swarm
	if !sw.Latency.On() && !sw.Unknown.On() {
		return OpFault{}, false
	}
	d := newDraw(sc.Seed, tagOp, uint64(ref.Node), uint64(ref.Inc), ref.word())
	f.Op = ref
	if d.chance(sw.Latency.Probability) {
		stab := sw.Latency.Stability.D()
		switch d.intn(3) {
		case 0:
			f.ReqDelay = Dur(d.dur(0, stab))
		case 1:
			f.RespDelay = Dur(d.dur(0, stab))
		default:
			f.ReqDelay, f.RespDelay = Dur(d.dur(0, stab)), Dur(d.dur(0, stab))
		}
	}
	if d.chance(sw.Unknown.Probability) {
		f.Unknown = UnknownLost
		if d.chance(0.5) {
			f.Unknown = UnknownApplied
		}
	}
	return f, f.ReqDelay > 0 || f.RespDelay > 0 || f.Unknown != UnknownNone
}

// drawHintFault draws the fault of one hint delivery in a discovery run.
func drawHintFault(sc *Scenario, k hintKey, queueIdx int) (f HintFault, ok bool) {
	sw := &sc.Swarm
	if !sw.Hint.On() {
		return HintFault{}, false
	}
	d := newDraw(sc.Seed, tagHint, uint64(k.node), uint64(k.inc), uint64(k.src.Node+1), uint64(k.src.Inc), k.src.word(), uint64(queueIdx))
	if !d.chance(sw.Hint.Probability) {
		return HintFault{}, false
	}
	f = HintFault{Node: k.node, Inc: k.inc, Source: k.src, Queue: k.queue}
	switch d.intn(3) {
	case 0:
		f.Mode = HintDrop
	case 1:
		f.Mode = HintDuplicate
		f.Delay = Dur(d.dur(0, sw.Hint.Stability.D()))
	default:
		f.Mode = HintDelay
		f.Delay = Dur(d.dur(0, sw.Hint.Stability.D()))
	}
	return f, true
}
