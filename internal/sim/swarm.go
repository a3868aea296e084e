package sim

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Fault is one fault kind's parameters: how likely it strikes and how long
// (or how hard) it lasts once it does. A zero Probability switches the kind
// off. What the two numbers mean per kind is written on Swarm.
type Fault struct {
	Probability float64 `json:"p"`
	Stability   Dur     `json:"stability"`
}

// On reports whether the kind is active.
func (f Fault) On() bool { return f.Probability > 0 }

// Swarm is the per-run choice of which fault kinds are active and how hard:
// a pure function of the seed and the Fault Level (NewSwarm), printed in full
// at the start of a run. It only ever produces configurations inside the
// level's envelope.
type Swarm struct {
	// Shape says how the configuration was drawn: "calm" (nothing active),
	// "single:<kind>" (one kind) or "chaos" (a random subset of kinds).
	Shape string `json:"shape"`
	// Crash: Probability is crashes per node per second of the chaos
	// window; Stability is the mean time a crashed node stays down.
	Crash Fault `json:"crash"`
	// Isolation (Node Isolation): Probability is episodes per node per
	// second; Stability is the mean length of a window. Half the episodes
	// reject the node's store operations, half withhold them until heal.
	Isolation Fault `json:"isolation"`
	// Skew: Probability is clock jumps per node per second; Stability is
	// the largest offset a node's clock may stand at.
	Skew Fault `json:"skew"`
	// Hint: Probability is the chance each delivered Wake-Up Hint is
	// dropped, duplicated or delayed; Stability is the longest delay.
	Hint Fault `json:"hint"`
	// Latency: Probability is the chance each store operation is delayed
	// (request, response or both, so responses reorder); Stability is the
	// longest delay each way.
	Latency Fault `json:"latency"`
	// Unknown: Probability is the chance a store operation's outcome is
	// unknown to its caller: applied but answered with an error, or not
	// applied and answered with an error. Stability is unused.
	Unknown Fault `json:"unknown"`
	// Restart: Probability is store restarts per second; Stability is the
	// mean outage, during which every node's store operation fails. The
	// restarted store keeps every committed write (memstore's Clone) but
	// loses its Wake-Up Hint subscribers, which the running nodes never
	// renew: they carry on by polling alone.
	Restart Fault `json:"restart"`
	// Loss (Adversarial only): Probability is the chance each node but one
	// is lost for good mid-run, by a crash without restart or an isolation
	// that never heals. Stability is unused.
	Loss Fault `json:"loss"`
}

// swarmKinds names the kinds in a fixed order.
var swarmKinds = []string{"crash", "isolation", "skew", "hint", "latency", "unknown", "restart", "loss"}

func (s *Swarm) kind(name string) *Fault {
	switch name {
	case "crash":
		return &s.Crash
	case "isolation":
		return &s.Isolation
	case "skew":
		return &s.Skew
	case "hint":
		return &s.Hint
	case "latency":
		return &s.Latency
	case "unknown":
		return &s.Unknown
	case "restart":
		return &s.Restart
	case "loss":
		return &s.Loss
	}
	return nil
}

// kindsAt lists the kinds a level's envelope allows.
func kindsAt(level Level) []string {
	switch level {
	case Recoverable:
		return swarmKinds[:7]
	case Adversarial:
		return swarmKinds
	}
	return nil
}

// NewSwarm draws the Swarm of one seed at one Fault Level. About one run in
// five is calm, three in ten exercise a single fault kind, and the rest a
// random subset of the kinds the level allows, each at a random intensity.
// Pristine is always calm.
func NewSwarm(seed uint64, level Level) Swarm {
	kinds := kindsAt(level)
	if len(kinds) == 0 {
		return Swarm{Shape: "calm"}
	}
	d := newDraw(seed, tagSwarm)
	var s Swarm
	var active []string
	switch u := d.unit(); {
	case u < 0.2:
		s.Shape = "calm"
	case u < 0.5:
		k := kinds[d.intn(len(kinds))]
		s.Shape = "single:" + k
		active = []string{k}
	default:
		s.Shape = "chaos"
		for _, k := range kinds {
			if d.chance(0.6) {
				active = append(active, k)
			}
		}
	}
	for _, k := range active {
		*s.kind(k) = drawFault(d, k)
	}
	return s
}

// drawFault draws one kind's intensity.
func drawFault(d *draw, kind string) Fault {
	lp := func(lo, hi float64) float64 { return lo * math.Pow(hi/lo, d.unit()) }
	switch kind {
	case "crash":
		return Fault{lp(0.01, 0.3), Dur(d.logDur(50*time.Millisecond, 3*time.Second).Round(time.Millisecond))}
	case "isolation":
		return Fault{lp(0.01, 0.3), Dur(d.logDur(100*time.Millisecond, 6*time.Second).Round(time.Millisecond))}
	case "skew":
		return Fault{lp(0.05, 1), Dur(d.logDur(time.Millisecond, 3*time.Second).Round(time.Millisecond))}
	case "hint":
		return Fault{lp(0.05, 0.9), Dur(d.logDur(time.Millisecond, time.Second).Round(time.Millisecond))}
	case "latency":
		return Fault{lp(0.05, 0.8), Dur(d.logDur(100*time.Microsecond, 500*time.Millisecond).Round(time.Microsecond))}
	case "unknown":
		return Fault{lp(0.005, 0.2), 0}
	case "restart":
		return Fault{lp(0.02, 0.2), Dur(d.logDur(time.Millisecond, 2*time.Second).Round(time.Millisecond))}
	case "loss":
		return Fault{lp(0.2, 0.7), 0}
	}
	return Fault{}
}

// String prints the whole configuration, one kind per line.
func (s Swarm) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "swarm %s", s.Shape)
	for _, k := range swarmKinds {
		f := *s.kind(k)
		if f.On() {
			fmt.Fprintf(&b, "\n  %-9s on   p=%.4f stability=%v", k, f.Probability, f.Stability)
		} else {
			fmt.Fprintf(&b, "\n  %-9s off", k)
		}
	}
	return b.String()
}

// Active returns the names of the active kinds.
func (s Swarm) Active() []string {
	var out []string
	for _, k := range swarmKinds {
		if s.kind(k).On() {
			out = append(out, k)
		}
	}
	return out
}
