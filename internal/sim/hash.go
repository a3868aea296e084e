package sim

import (
	"math"
	"time"
)

// Every draw in the Simulator is a hash of the seed and the stable identity of
// the thing drawn for — a job and its Attempt, a node and an episode number, a
// store operation — never the next value of a shared stream. Draw order
// therefore never matters: removing one fault from a Fault Map, or one job
// from a Scenario, leaves every other draw as it was.

// Tags keep the draws of different kinds apart.
const (
	tagJob uint64 = iota + 1
	tagHandler
	tagCancelAction
	tagQueueAction
	tagDeploy
	tagNode
	tagCrash
	tagIsolation
	tagSkew
	tagHint
	tagOp
	tagLoss
	tagSwarm
	tagScenario
	tagRestart
	tagRate
	tagRateAction
	tagObserver
	tagFleet
	tagCursor
	tagSnooze
	tagKey
	tagBatch
)

// mix64 is the splitmix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashOf folds words into one hash.
func hashOf(words ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, w := range words {
		h = mix64(h ^ (w + 0x632be59bd9b4e019 + h<<6 + h>>2))
	}
	return h
}

// draw is a small deterministic stream for one identity: successive calls
// give independent values, all a pure function of the identity.
type draw struct {
	base uint64
	n    uint64
}

func newDraw(words ...uint64) *draw { return &draw{base: hashOf(words...)} }

func (d *draw) next() uint64 {
	d.n++
	return mix64(d.base + d.n*0x9e3779b97f4a7c15)
}

// unit returns a float in [0, 1).
func (d *draw) unit() float64 { return float64(d.next()>>11) / (1 << 53) }

// chance returns true with probability p.
func (d *draw) chance(p float64) bool { return p > 0 && d.unit() < p }

// intn returns an int in [0, n); n ≥ 1.
func (d *draw) intn(n int) int { return int(d.next() % uint64(n)) }

// between returns an int in [lo, hi].
func (d *draw) between(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + d.intn(hi-lo+1)
}

// dur returns a duration uniform in [lo, hi].
func (d *draw) dur(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(d.unit()*float64(hi-lo))
}

// logDur returns a duration log-uniform in [lo, hi]; lo > 0.
func (d *draw) logDur(lo, hi time.Duration) time.Duration {
	if hi <= lo || lo <= 0 {
		return lo
	}
	return time.Duration(float64(lo) * math.Pow(float64(hi)/float64(lo), d.unit()))
}

// exp returns an exponentially distributed gap with the given mean.
func (d *draw) exp(mean time.Duration) time.Duration {
	u := d.unit()
	return time.Duration(-math.Log(1-u) * float64(mean))
}
