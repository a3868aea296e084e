package sim

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// Concurrency Keys in the Simulator. Some Scenarios draw keys (Workload.
// Keys): a share of the jobs carries one, skewed so that one key, k0, holds
// most of them (the flooding key), and some Queues get a key policy
// (QueueSpec: a Key Limit, a Key Rate, Fair Claim). The draws are their own
// (tagKey): a Scenario that draws no keys keeps every other draw, so its
// run is the run it was before keys existed.
//
// The oracles, all in this file and hooked at the one Caller point:
//
//   - key-limit, every level: no applied claim takes a key's Running count
//     in its Queue above the Key Limit (store.KeyPolicy), counted across
//     every node from the transition feed.
//   - key-rate, every level: no applied claim makes a key's count in the
//     window of the store's now exceed the Key Rate's Limit (the Rate Limit's
//     window rule, per key).
//   - fair-start, under Pristine and Recoverable (fairOracle): with Fair
//     Claim, every due job of a key that may start starts within a bound
//     of other keys' starts; the bound and its derivation are on fairOracle.

// Invariants of Concurrency Keys.
const (
	// InvKeyLimit: a claim took a key's Running count in its Queue above
	// the Queue's Key Limit.
	InvKeyLimit = "key-limit"
	// InvKeyRate: a claim made a key's window count exceed the Queue's Key
	// Rate.
	InvKeyRate = "key-rate"
	// InvFairStart: under Fair Claim, a key's due job waited past the
	// bound of other keys' starts (fairOracle).
	InvFairStart = "fair-start"
)

// Situations of Concurrency Keys.
var (
	// SitKeyLimitSaturated: a claim left a key at its Key Limit.
	SitKeyLimitSaturated = newSituation("key-limit-saturated")
	// SitKeyRateSpent: a claim spent a key's Key Rate for its window.
	SitKeyRateSpent = newSituation("key-rate-spent")
	// SitFairClaimRotated: a Fair Claim served two keys or more while the
	// first it served still had a due job: the rotation, not due order,
	// chose.
	SitFairClaimRotated = newSituation("fair-claim-rotated")
)

// floodKey is the key that holds most keyed jobs.
const floodKey = "k0"

// keyName names key i of a Scenario.
func keyName(i int) string { return "k" + strconv.Itoa(i) }

// drawKeys gives some Scenarios Concurrency Keys: how many, the share of
// jobs carrying one, the flooding key's share of those, and the Queues'
// key policies.
func drawKeys(sc *Scenario) {
	d := newDraw(sc.Seed, tagKey, 0)
	if !d.chance(0.4) {
		return
	}
	sc.Work.Keys = d.between(2, 12)
	sc.Work.KeyShare = float64(d.between(5, 10)) / 10
	sc.Work.KeyFlood = float64(d.between(6, 9)) / 10
	for i := range sc.Queues {
		q := &sc.Queues[i]
		d := newDraw(sc.Seed, tagKey, uint64(1+i))
		q.FairClaim = d.chance(0.6)
		if d.chance(0.4) {
			q.KeyLimit = d.between(1, 3)
			if q.Limit > 0 {
				q.KeyLimit = min(q.KeyLimit, q.Limit)
			}
		}
		if d.chance(0.3) {
			period := d.logDur(20*time.Millisecond, time.Second).Round(time.Millisecond)
			q.KeyRateLimit, q.KeyRatePeriod = keyRateFloor(sc, period)+d.intn(4), Dur(period)
		}
	}
}

// keyRateFloor is the smallest Key Rate Limit per period that starts twice
// the flooding key's expected share of a Queue's jobs within the chaos
// window, so a Key Rate binds in bursts without stretching the run.
func keyRateFloor(sc *Scenario, period time.Duration) int {
	share := int(2*float64(sc.Work.Jobs)*sc.Work.KeyShare*sc.Work.KeyFlood)/max(1, len(sc.Queues)) + 1
	return max(1, int((int64(share)*int64(period)+int64(sc.Chaos.D())-1)/int64(sc.Chaos.D())))
}

// keyOf draws job i's Concurrency Key: none, the flooding key, or one of
// the others evenly.
func keyOf(sc *Scenario, i int) string {
	if sc.Work.Keys == 0 {
		return ""
	}
	d := newDraw(sc.Seed, tagKey, 1<<32, uint64(i))
	switch {
	case !d.chance(sc.Work.KeyShare):
		return ""
	case d.chance(sc.Work.KeyFlood) || sc.Work.Keys == 1:
		return floodKey
	}
	return keyName(1 + d.intn(sc.Work.Keys-1))
}

// keyPolicy returns the Queue's key policy.
func (q QueueSpec) keyPolicy() store.KeyPolicy {
	return store.KeyPolicy{Limit: q.KeyLimit, Rate: store.QueueRate{Limit: q.KeyRateLimit, Period: q.KeyRatePeriod.D()}, Fair: q.FairClaim}
}

// validateKeys reports the first invalid key setting of the Scenario.
func (sc *Scenario) validateKeys() error {
	w := sc.Work
	if w.Keys < 0 || w.KeyShare < 0 || w.KeyShare > 1 || w.KeyFlood < 0 || w.KeyFlood > 1 {
		return fmt.Errorf("%w: keys %d, key share %v, flood %v", ErrInvalidPlan, w.Keys, w.KeyShare, w.KeyFlood)
	}
	for _, q := range sc.Queues {
		p := q.keyPolicy()
		if err := p.Validate(); err != nil {
			return fmt.Errorf("%w: queue %s: %w", ErrInvalidPlan, q.Name, err)
		}
		if err := store.ValidateKeyLimit(p.Limit, q.Limit); err != nil {
			return fmt.Errorf("%w: queue %s: %w", ErrInvalidPlan, q.Name, err)
		}
	}
	return nil
}

// setupKeys sets each Queue's key policy in the store.
func (w *world) setupKeys() {
	for _, q := range w.sc.Queues {
		p := q.keyPolicy()
		if p.Limit > 0 {
			w.mustStore(w.st.QueueSetKeyLimit(w.ctx, store.QueueSetKeyLimitParams{Queue: q.Name, Limit: p.Limit}))
		}
		if !p.Rate.IsZero() {
			w.mustStore(w.st.QueueSetKeyRate(w.ctx, store.QueueSetKeyRateParams{Queue: q.Name, Rate: p.Rate}))
		}
		if p.Fair {
			w.mustStore(w.st.QueueSetFairClaim(w.ctx, store.QueueSetFairClaimParams{Queue: q.Name, Fair: true}))
		}
	}
}

// keyOfJob is the Concurrency Key of the job with store id id.
func (w *world) keyOfJob(id job.ID) (q int, key string) {
	js := &w.wl.jobs[w.byID[id-1]]
	return js.queue, js.key
}

// keyBound is the key policies' share of the Drain-Liveness bound (see
// drainBound): a key k of Queue q with W_qk claims left runs at most
// min(c_q, K_q) Attempts at once under a Key Limit of K_q, so it needs at
// most ⌈W_qk / min(c_q, K_q)⌉ slots run one after another; under a Key
// Rate of r_q per R_q it needs (⌈W_qk / r_q⌉ + 1) windows, each opening
// within P. Summing every key's terms on top of the Queue's counts each
// keyed Attempt again, which keeps the bound conservative.
func (w *world) keyBound(work map[[2]string]int, pool []int, slot, poll time.Duration) time.Duration {
	var out time.Duration
	for qk, wk := range work {
		q := w.queueIx[qk[0]]
		p := w.sc.Queues[q].keyPolicy()
		if qk[1] == "" || wk == 0 {
			continue
		}
		if p.Limit > 0 {
			c := min(max(pool[q], 1), p.Limit)
			out += time.Duration((wk+c-1)/c) * slot
		}
		if r := p.Rate; !r.IsZero() {
			out += time.Duration((wk+r.Limit-1)/r.Limit+1) * (r.Period + poll)
		}
	}
	return out
}

// keyTrack is the key oracles' count of one key of one Queue: its Running
// jobs and its Key Rate window.
type keyTrack struct {
	running int
	window  time.Time
	count   int
}

// keyOracle holds every applied claim to the Key Limit and the Key Rate,
// from the transition feed, and (fair) to the Fair Claim bound.
type keyOracle struct {
	keys map[[2]string]*keyTrack // (Queue, key) → its count
	fair fairOracle
}

func init() {
	registerOracle(oracleDef{
		name:       InvKeyLimit,
		situations: []Situation{SitKeyLimitSaturated, SitKeyRateSpent, SitFairClaimRotated},
		new:        func() oracle { return &keyOracle{keys: map[[2]string]*keyTrack{}} },
	})
}

// track returns the count of key in queue q.
func (o *keyOracle) track(w *world, q int, key string) *keyTrack {
	k := [2]string{w.sc.Queues[q].Name, key}
	t := o.keys[k]
	if t == nil {
		t = &keyTrack{}
		o.keys[k] = t
	}
	return t
}

// edge counts one state change of a keyed job and checks a claim against
// its Queue's Key Limit and Key Rate.
func (o *keyOracle) edge(w *world, id job.ID, e core.Edge, _ job.Attempt) {
	q, key := w.keyOfJob(id)
	if e.Via == core.ViaClaim {
		o.fair.served(w, q, key)
	}
	if key == "" {
		return
	}
	t := o.track(w, q, key)
	if e.From == job.StateRunning {
		t.running--
	}
	if e.To != job.StateRunning {
		return
	}
	t.running++
	p := w.sc.Queues[q].keyPolicy()
	if p.Limit > 0 {
		switch {
		case t.running > p.Limit:
			w.failf(ClassSafety, InvKeyLimit, "claim of job %d took key %s of queue %s to %d Running with Key Limit %d",
				id, key, w.sc.Queues[q].Name, t.running, p.Limit)
		case t.running == p.Limit:
			w.cov.hit(SitKeyLimitSaturated)
		}
	}
	if r := p.Rate; !r.IsZero() {
		if ws := r.WindowStart(w.storeNow()); !ws.Equal(t.window) {
			t.window, t.count = ws, 0
		}
		t.count++
		switch {
		case t.count > r.Limit:
			w.failf(ClassSafety, InvKeyRate, "claim of job %d was start %d of key %s of queue %s in the window from %v, past its Key Rate %s",
				id, t.count, key, w.sc.Queues[q].Name, t.window.Sub(w.start), r)
		case t.count == r.Limit:
			w.cov.hit(SitKeyRateSpent)
		}
	}
}

// eligible reports whether key of Queue q may start a job now: always for
// no key; otherwise under its Key Limit and with Key Rate budget left in
// the window of the store's now.
func (o *keyOracle) eligible(w *world, q int, key string) bool {
	if key == "" {
		return true
	}
	p, t := w.sc.Queues[q].keyPolicy(), o.track(w, q, key)
	if p.Limit > 0 && t.running >= p.Limit {
		return false
	}
	if r := p.Rate; !r.IsZero() && r.WindowStart(w.storeNow()).Equal(t.window) && t.count >= r.Limit {
		return false
	}
	return true
}

func (o *keyOracle) before(w *world, _ *simNode, c node.StoreCommand) {
	if c, ok := c.(node.Claim); ok {
		o.fair.before(w, o, c)
	}
}

func (o *keyOracle) after(w *world, _ *simNode, _ *op, c node.StoreCommand, r *node.Reply) {
	if c, ok := c.(node.Claim); ok {
		o.fair.after(w, c, r.Jobs)
	}
}

// fairOracle is fair-start. The bound, derived from the rule of
// store.KeyPolicy (Fair Claim): every job a Fair Claim takes is one turn,
// and keys take turns least recently served first. Say key k has a due job
// and may start (under its Key Limit, with Key Rate budget) through a
// stretch of claims on its Queue. Every other key x served in that stretch
// is served once before k at most: serving x gives it the newest turn,
// newer than k's, so x comes after k in every later claim's order, and
// within one claim every key's first turn comes before any key's second.
// So k is served within K−1 starts of other keys, K the keys with a due
// job — and a job j of k with m of k's due jobs ahead of it starts within
// (m+1)·K starts of the Queue. In time: a claim on the Queue takes at
// least one job whenever one of its W workers is free (each node re-polls
// within P of an outcome, taking up to its claim batch B ≥ 1, the free
// capacity), and a worker frees within D + F, so K starts take at most
// ⌈K/min(W, B·N)⌉·(P + D + F) for N nodes serving the Queue once the
// faults have ceased — the Drain-Liveness slot. The oracle checks the
// count form, which faults cannot stretch: no key is served twice while k
// waits, due and able to start, through claims that offered k's jobs
// (a claim with a fleet Skip list may not have, and is not counted).
// It runs under Pristine and Recoverable, as Drain-Liveness does.
type fairOracle struct {
	// waiting holds, per Queue and waiting key, the keys served since it
	// began to wait.
	waiting map[[2]string]map[string]bool
	// offered are the keys of each Fair Queue that had a due job and could
	// start at the claim's before, per Queue index.
	offered map[int][]string
}

// before notes, for each Fair Queue the claim names, the keys with a due
// job that may start.
func (f *fairOracle) before(w *world, o *keyOracle, c node.Claim) {
	f.offered = nil
	if !w.sc.Level.LivenessChecked() || len(c.Skip) > 0 {
		return
	}
	now := w.storeNow()
	for _, name := range c.Queues {
		q, ok := w.queueIx[name]
		if !ok || !w.sc.Queues[q].FairClaim {
			continue
		}
		var keys []string
		for i := range w.jobs {
			js := &w.jobs[i]
			spec := &w.wl.jobs[i]
			if spec.queue != q || !js.inserted || js.state != job.StateScheduled || js.due.After(now) {
				continue
			}
			if !slices.Contains(keys, spec.key) && o.eligible(w, q, spec.key) {
				keys = append(keys, spec.key)
			}
		}
		if f.offered == nil {
			f.offered = map[int][]string{}
		}
		f.offered[q] = keys
	}
}

// after checks each Fair Queue's takes: no key waiting since before this
// claim sees a key served twice.
func (f *fairOracle) after(w *world, c node.Claim, jobs []job.Job) {
	if f.offered == nil {
		return
	}
	if f.waiting == nil {
		f.waiting = map[[2]string]map[string]bool{}
	}
	for q, keys := range f.offered {
		name := w.sc.Queues[q].Name
		served := map[string]int{}
		var order []string
		for _, j := range jobs {
			if j.Queue == name {
				served[j.ConcurrencyKey]++
				order = append(order, j.ConcurrencyKey)
			}
		}
		if len(order) == 0 {
			continue
		}
		if len(served) > 1 && served[order[0]] == 1 && slices.Contains(keys, order[0]) {
			w.cov.hit(SitFairClaimRotated)
		}
		for _, k := range keys {
			if served[k] > 0 {
				continue
			}
			seen := f.waiting[[2]string{name, k}]
			if seen == nil {
				seen = map[string]bool{}
				f.waiting[[2]string{name, k}] = seen
			}
			for x, n := range served {
				if n > 1 || seen[x] {
					w.failf(ClassLiveness, InvFairStart, "claim %v served key %q of queue %s again (%v) while key %q waited with a due job it could start",
						c.Op, x, name, order, k)
					return
				}
				seen[x] = true
			}
		}
		// A key no longer offered stops waiting.
		for wk := range f.waiting {
			if wk[0] == name && !slices.Contains(keys, wk[1]) {
				delete(f.waiting, wk)
			}
		}
	}
}

// served ends key's wait in Queue q: one of its jobs started.
func (f *fairOracle) served(w *world, q int, key string) {
	delete(f.waiting, [2]string{w.sc.Queues[q].Name, key})
}
