package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// Transition Observers in the workload (glossary: Transition Observer).
//
// Some runs register Observers on some nodes: each node registering one runs
// a node.Walker for it beside its Driver, as the production Shell does, its
// walk's store calls going through the same node.Caller and the same fault
// wrapper as the Driver's, addressed by their machine (OpRef.Machine) and
// the Walker's own OpIDs, each response routed back to the machine that
// sent it. The host's callback is simulated: it takes a drawn time and, on its first two
// tries of an entry at most, may fail — a failure the Walker retries — so
// callback failures are bounded and heal at every level.
//
// The oracles:
//
//   - Observer-Delivery-Liveness (Pristine and Recoverable): once the
//     faults ceased and every job is terminal, every transition to a
//     declared state the store applied is delivered at least once, within
//     a bound (observerBound), by a node that registers the Observer —
//     unless every such node is lost.
//   - Observer-Delivery-Safety (every level): nothing is delivered that the
//     store did not apply — for each (job, state, Attempt), no more distinct
//     Transition Log entries are delivered than transitions were applied.
//
// The truth is the transition feed (Store's Feed), which counts every
// applied change even after retention purged its job.

// ObserverSpec is one Transition Observer of a Scenario.
type ObserverSpec struct {
	Name   string      `json:"name"`
	States []job.State `json:"states"`
	// Nodes are the nodes that register it.
	Nodes    []int `json:"nodes"`
	Interval Dur   `json:"interval"`
	Lease    Dur   `json:"lease"`
	Limit    int   `json:"limit"`
	// DeliverMax bounds how long the simulated callback takes.
	DeliverMax Dur `json:"deliver_max"`
	// FailProb is the chance that one of an entry's first two tries fails.
	FailProb float64 `json:"fail_prob"`
}

// walkerConfig is the Walker of o.
func (o *ObserverSpec) walkerConfig(k int) node.WalkerConfig {
	return node.WalkerConfig{
		Observer: o.Name, States: o.States, LeaseDuration: o.Lease.D(), Interval: o.Interval.D(),
		MaxBackoff: 4 * o.Interval.D(), Limit: o.Limit,
	}
}

// driverMachine is the OpRef.Machine of a node's Driver; the Walker of the
// k-th Observer is k+1 (walker.machine).
const driverMachine = 0

// machine is the OpRef.Machine of the Walker's operations.
func (wk *walker) machine() int { return wk.k + 1 }

var observableStates = []job.State{
	job.StateScheduled, job.StateRunning, job.StateSucceeded, job.StateDeadLettered, job.StateCancelled, job.StateQuarantined,
}

// drawObservers draws the Scenario's Transition Observers from draws of
// their own (tagObserver), so every other draw stays as it was.
func drawObservers(sc *Scenario) {
	d := newDraw(sc.Seed, tagObserver)
	if !d.chance(0.5) {
		return
	}
	for k := range d.between(1, 2) {
		o := ObserverSpec{
			Name:       fmt.Sprintf("obs%d", k),
			Interval:   Dur(d.logDur(20*time.Millisecond, 300*time.Millisecond).Round(time.Millisecond)),
			Lease:      Dur(d.logDur(300*time.Millisecond, 2*time.Second).Round(time.Millisecond)),
			Limit:      d.between(1, 40),
			DeliverMax: Dur(d.logDur(time.Millisecond, 700*time.Millisecond).Round(time.Millisecond)),
			FailProb:   float64(d.intn(3)) / 10,
		}
		for _, s := range observableStates {
			if d.chance(0.4) {
				o.States = append(o.States, s)
			}
		}
		if len(o.States) == 0 {
			o.States = []job.State{job.StateDeadLettered}
		}
		for i := range sc.Nodes {
			if d.chance(0.6) {
				o.Nodes = append(o.Nodes, i)
			}
		}
		if len(o.Nodes) == 0 {
			o.Nodes = []int{d.intn(len(sc.Nodes))}
		}
		sc.Observers = append(sc.Observers, o)
	}
}

// validateObservers reports the first invalid Observer of the Scenario.
func (sc *Scenario) validateObservers() error {
	names := map[string]bool{}
	for k := range sc.Observers {
		o := &sc.Observers[k]
		if names[o.Name] {
			return fmt.Errorf("%w: two observers named %q", ErrInvalidPlan, o.Name)
		}
		names[o.Name] = true
		if err := o.walkerConfig(k).Validate(); err != nil {
			return fmt.Errorf("%w: observer %q: %w", ErrInvalidPlan, o.Name, err)
		}
		if o.DeliverMax <= 0 || o.FailProb < 0 || o.FailProb > 1 {
			return fmt.Errorf("%w: observer %q: deliver max %v, fail prob %v", ErrInvalidPlan, o.Name, o.DeliverMax, o.FailProb)
		}
		for _, i := range o.Nodes {
			if i < 0 || i >= len(sc.Nodes) {
				return fmt.Errorf("%w: observer %q on unknown node %d", ErrInvalidPlan, o.Name, i)
			}
		}
	}
	return nil
}

// obsKey names the transitions the oracles count: a job reaching a state
// at an Attempt.
type obsKey struct {
	id      job.ID
	state   job.State
	attempt job.Attempt
}

// obsTrack is what the oracles keep of one Observer.
type obsTrack struct {
	// applied counts the transitions to a declared state the store applied.
	applied map[obsKey]int
	// delivered holds, per key, the distinct Transition Log entries (by
	// Seq) delivered, with how many times each.
	delivered map[obsKey]map[int64]int
	// missing counts the applied transitions not yet delivered once.
	missing int
	// fed counts every transition applied, declared or not: the entries a
	// walk may have to read past.
	fed int
	// holder is the last holder a claim gave the walk to, with its token.
	holder job.WorkerID
	token  int64
	// registered: a claim registered the Observer in the store. Retention
	// holds entries back for it from then on only, so transitions of jobs
	// purged before are not owed (a new registration starts at the
	// beginning of the Transition Log the store still holds).
	registered bool
}

// obsWorld is the run's Observer bookkeeping.
type obsWorld struct {
	tracks   []obsTrack
	deadline time.Time
	bound    time.Duration
}

func (w *world) setupObservers() {
	w.obs.tracks = make([]obsTrack, len(w.sc.Observers))
	for k := range w.obs.tracks {
		w.obs.tracks[k] = obsTrack{applied: map[obsKey]int{}, delivered: map[obsKey]map[int64]int{}}
	}
}

// noteObserved counts an applied transition for every Observer declaring
// its state (from the transition feed).
func (w *world) noteObserved(id job.ID, e core.Edge, a job.Attempt) {
	for k := range w.sc.Observers {
		w.obs.tracks[k].fed++
		if !slices.Contains(w.sc.Observers[k].States, e.To) {
			continue
		}
		t := &w.obs.tracks[k]
		key := obsKey{id: id, state: e.To, attempt: a}
		t.applied[key]++
		if t.applied[key] > len(t.delivered[key]) {
			t.missing++
		}
	}
}

// walker is one Observer's Walker on one node incarnation.
type walker struct {
	k int
	w *node.Walker
	// tries counts the callback's tries per entry (by Seq), for the drawn
	// failures.
	tries map[int64]int
}

// startWalkers makes the node's Walkers, one per Observer it registers, and
// starts their tickers.
func (n *simNode) startWalkers() {
	w := n.w
	n.walkers = nil
	for k := range w.sc.Observers {
		o := &w.sc.Observers[k]
		if !slices.Contains(o.Nodes, n.idx) {
			continue
		}
		cfg := o.walkerConfig(k)
		plantWalker(&cfg, w.sc.Mutation)
		wk, err := node.NewWalker(cfg)
		if err != nil {
			w.failf(ClassCrash, InvPanic, "node %d: observer %s: %v", n.idx, o.Name, err)
			return
		}
		for len(n.walkers) <= k {
			n.walkers = append(n.walkers, nil)
		}
		n.walkers[k] = &walker{k: k, w: wk, tries: map[int64]int{}}
		w.schedule(event{at: w.now.Add(cfg.Tick()), kind: evWalkTick, node: n.idx, inc: n.inc, idx: k})
	}
}

// handleWalk processes a walk event addressed to the node.
func (n *simNode) handleWalk(ev *event) {
	w := n.w
	if ev.idx >= len(n.walkers) || n.walkers[ev.idx] == nil {
		return
	}
	wk := n.walkers[ev.idx]
	switch ev.kind {
	case evWalkTick:
		w.schedule(event{at: w.now.Add(wk.w.Config().Tick()), kind: evWalkTick, node: n.idx, inc: n.inc, idx: ev.idx})
		n.stepWalk(wk, node.WalkTick{Now: n.now()})
	case evWalkDelivered:
		d := ev.delivery
		if !d.failed {
			w.recordDelivery(wk.k, d.t)
		} else {
			w.cov.hit(SitObserverDeliveryFailed)
		}
		n.stepWalk(wk, node.Delivered{Now: n.now(), Position: d.t.Position, Failed: d.failed})
	}
}

// delivery is one simulated callback's result.
type delivery struct {
	t      store.ObservedTransition
	failed bool
}

// stepWalk feeds one event to a Walker and carries out its commands, as
// the production walk pump does.
func (n *simNode) stepWalk(wk *walker, ev node.Event) {
	w := n.w
	m := wk.machine()
	w.traceInput(n, m, ev)
	cmds := wk.w.Step(ev, nil)
	for i := 0; i < len(cmds) && n.up; i++ {
		w.traceCommand(n, m, cmds[i])
		switch c := cmds[i].(type) {
		case node.StoreCommand:
			if res := n.send(m, c); res != nil {
				w.traceInput(n, m, res)
				cmds = wk.w.Step(res, cmds)
			}
		case node.Deliver:
			n.runCallback(wk, c.Transition)
		default:
			panic(fmt.Sprintf("sim: unknown walk command %T", c))
		}
	}
}

// runCallback starts the simulated callback for one entry: its time and
// whether it fails are drawn from (seed, Observer, node, entry, try).
func (n *simNode) runCallback(wk *walker, t store.ObservedTransition) {
	w := n.w
	o := &w.sc.Observers[wk.k]
	try := wk.tries[t.Position.Seq]
	wk.tries[t.Position.Seq]++
	d := newDraw(w.sc.Seed, tagObserver, uint64(wk.k+1), uint64(n.idx), uint64(t.Position.Seq), uint64(try))
	dur := d.dur(0, o.DeliverMax.D())
	failed := try < 2 && d.chance(o.FailProb)
	w.schedule(event{at: w.now.Add(dur), kind: evWalkDelivered, node: n.idx, inc: n.inc, idx: wk.k, delivery: &delivery{t: t, failed: failed}})
}

// routeWalk feeds a delayed store response to the Walker that sent it
// (its OpRef's Machine); false for the Driver's.
func (n *simNode) routeWalk(o *op) bool {
	if o.ref.Machine == driverMachine {
		return false
	}
	if k := o.ref.Machine - 1; k < len(n.walkers) && n.walkers[k] != nil {
		n.stepWalk(n.walkers[k], o.reply.Event(n.now()))
	}
	return true
}

// recordDelivery is Observer-Delivery-Safety: a delivered entry must be one
// of the transitions the store applied.
func (w *world) recordDelivery(k int, t store.ObservedTransition) {
	tr := &w.obs.tracks[k]
	key := obsKey{id: t.Job, state: t.State, attempt: t.Attempt}
	seqs := tr.delivered[key]
	if seqs == nil {
		seqs = map[int64]int{}
		tr.delivered[key] = seqs
	}
	if seqs[t.Position.Seq] > 0 {
		w.cov.hit(SitObserverRedelivered)
	} else if len(seqs) < tr.applied[key] {
		tr.missing--
	}
	seqs[t.Position.Seq]++
	if len(seqs) > tr.applied[key] {
		w.failf(ClassSafety, InvObserverDeliverySafety, "observer %s was delivered %d entries of job %d reaching %s at Attempt %d, the store applied %d",
			w.sc.Observers[k].Name, len(seqs), t.Job, t.State, t.Attempt, tr.applied[key])
	}
	if !slices.Contains(w.sc.Observers[k].States, t.State) {
		w.failf(ClassSafety, InvObserverDeliverySafety, "observer %s was delivered job %d reaching %s, a state it does not declare", w.sc.Observers[k].Name, t.Job, t.State)
	}
}

// noteWalkClaim records who holds an Observer's walk (checked.go).
func (w *world) noteWalkClaim(name string, holder job.WorkerID, res store.ObserverClaimResult) {
	k := slices.IndexFunc(w.sc.Observers, func(o ObserverSpec) bool { return o.Name == name })
	if k < 0 {
		return
	}
	tr := &w.obs.tracks[k]
	if !tr.registered {
		tr.registered = true
		w.forgivePurged(tr)
	}
	if !res.Held {
		return
	}
	if tr.holder != "" && tr.holder != holder && res.Token != tr.token {
		w.cov.hit(SitObserverLeaseTakeover)
	}
	tr.holder, tr.token = holder, res.Token
}

// observersCaughtUp reports whether every Observer with a node that can
// still walk was delivered every transition it declares.
func (w *world) observersCaughtUp() bool {
	for k := range w.obs.tracks {
		if w.obs.tracks[k].missing > 0 && w.observerCanWalk(k) {
			return false
		}
	}
	return true
}

// observerCanWalk reports whether some node registering Observer k is not
// lost for good.
func (w *world) observerCanWalk(k int) bool {
	for _, i := range w.sc.Observers[k].Nodes {
		if n := w.nodes[i]; !n.lost && !n.isoPermanent {
			return true
		}
	}
	return false
}

// waitObservers is reached when every job is terminal after the chaos
// window: the run goes on until the Observers caught up, or their deadline.
func (w *world) waitObservers() {
	if !w.obs.deadline.IsZero() {
		return
	}
	w.obs.bound = w.observerBound()
	w.obs.deadline = w.now.Add(w.obs.bound)
	w.schedule(event{at: w.obs.deadline, kind: evObserverDeadline})
}

// observerBound is Observer-Delivery-Liveness's bound, from the instant
// every job is terminal with the faults ceased. Per Observer: the walk's
// Lease held by a crashed or formerly isolated node lapses within L plus
// X, the longest request and response delay of an operation in flight;
// a walk starts within its Tick; then each entry still missing costs at
// most one delivery and, for each of its at most two failures, a backoff
// (at most 4 Intervals) and a delivery again, and each claim round at most
// a Tick of its own; besides, a walk may spend a round of Interval plus two
// Ticks per Limit entries it reads past with nothing to deliver (the
// Walker's idle pacing), over every entry the store applied.
func (w *world) observerBound() time.Duration {
	var inflight time.Duration
	for _, f := range w.faults.Ops {
		inflight = max(inflight, f.ReqDelay.D()+f.RespDelay.D())
	}
	var skew time.Duration
	for _, f := range w.faults.Skews {
		skew = max(skew, f.Offset.D(), -f.Offset.D())
	}
	var bound time.Duration
	for k := range w.sc.Observers {
		o := &w.sc.Observers[k]
		cfg := o.walkerConfig(k)
		per := 3*o.DeliverMax.D() + 2*cfg.MaxBackoff + 2*cfg.Tick()
		b := o.Lease.D() + inflight + 2*skew + 2*cfg.Tick() + time.Duration(w.obs.tracks[k].missing)*per
		b += time.Duration(w.obs.tracks[k].fed/o.Limit+1) * (o.Interval.D() + 2*cfg.Tick())
		bound = max(bound, b)
	}
	return bound + 500*time.Millisecond
}

// checkObserverLiveness is Observer-Delivery-Liveness at the deadline.
func (w *world) checkObserverLiveness() {
	if !w.sc.Level.LivenessChecked() {
		return
	}
	for k := range w.obs.tracks {
		tr := &w.obs.tracks[k]
		if tr.missing == 0 || !w.observerCanWalk(k) {
			continue
		}
		var eg []string
		for key, n := range tr.applied {
			if len(tr.delivered[key]) < n && len(eg) < 5 {
				eg = append(eg, fmt.Sprintf("job %d→%s@%d", key.id, key.state, key.attempt))
			}
		}
		slices.Sort(eg)
		w.failf(ClassLiveness, InvObserverDeliveryLiveness, "observer %s: %d transitions of declared states never delivered within %v of every job ending with the faults ceased, e.g. %v",
			w.sc.Observers[k].Name, tr.missing, w.obs.bound, eg)
		return
	}
}

// forgivePurged drops, at an Observer's registration, what it is owed of
// jobs retention purged before: the store never had to keep them for it.
func (w *world) forgivePurged(tr *obsTrack) {
	for key, n := range tr.applied {
		if _, err := w.st.JobGet(w.ctx, key.id); !errors.Is(err, store.ErrNotFound) {
			continue
		}
		if owed := n - len(tr.delivered[key]); owed > 0 {
			tr.missing -= owed
		}
		delete(tr.applied, key)
	}
}
