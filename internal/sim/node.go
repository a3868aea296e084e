package sim

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// attempt is the pump's side of one executing Attempt, as the production
// pump keeps it: whether its handler returned, and what it will do.
type attempt struct {
	done bool
	plan attemptPlan
	// result is what the handler returned; signalled is set once the
	// Driver asked it to stop.
	result    core.Result
	signalled bool
	// wire is the job's Wire Name, for a batch job (batched) the call it
	// waits for or runs in (batch.go).
	wire    string
	batched bool
}

// simNode is one node: the production Driver plus the Simulator's pump,
// which carries out each Command the way the production pump (package shell)
// does, synchronously, on Virtual Time.
type simNode struct {
	w    *world
	idx  int
	spec *NodeSpec

	// inc is the incarnation: 1 for the first start, one more per restart.
	inc      int
	up       bool
	lost     bool // lost for good (Adversarial)
	worker   job.WorkerID
	drv      *node.Driver
	cmds     []node.Command
	head     int
	attempts map[job.Lease]*attempt
	serves   map[string]bool
	unsub    func()

	// wakePending is the single pending wake slot hints coalesce in.
	wakePending bool
	// repollAt is when the one pending re-poll (node.PollAfter) fires;
	// zero when none is pending.
	repollAt time.Time
	skew     time.Duration

	isoDepth     int
	isoPermanent bool
	withhold     bool
	isoTouched   bool
	withheld     []*op
	pendingApply int
	lastApply    time.Time
	sendSeq      uint64
	lastResp     uint64
	crashed      bool

	// loaded is what the incarnation's last schedule load answered: the
	// schedules a planted mint bug edits the Mint after it by (planted.go).
	loaded []node.LoadedSchedule

	// walkers are the incarnation's Transition Observer Walkers, by
	// Observer index (nil for one the node does not register).
	walkers []*walker
	// fl is the node's side of a Mixed-Version Fleet (fleet.go).
	fl fleetNode
	// batch is the incarnation's batch calls (batch.go).
	batch batchState
}

func newSimNode(w *world, i int) *simNode {
	n := &simNode{w: w, idx: i, spec: &w.sc.Nodes[i], serves: make(map[string]bool)}
	for _, q := range n.spec.Policy.Queues {
		n.serves[q] = true
	}
	return n
}

// now is the node's clock: Virtual Time plus its skew. It only paces the
// Driver's own cadence; the store's clock decides Leases and due times.
func (n *simNode) now() time.Time { return n.w.now.Add(n.skew) }

// handle processes an event addressed to the node.
func (n *simNode) handle(ev *event) {
	if ev.kind == evStart {
		if !n.up && !n.lost && ev.inc == n.inc {
			n.start()
		}
		return
	}
	if ev.kind == evDeployStop && n.w.wl.deploys[ev.idx].upgrade {
		n.fl.toVersion = 1 // the new release is in place: the next start runs it
	}
	if ev.kind == evDeployStop && n.up {
		ev.inc = n.inc // a deploy stops whichever incarnation runs
	}
	if !n.up || ev.inc != n.inc {
		return // addressed to an incarnation that is gone
	}
	w := n.w
	switch ev.kind {
	case evPoll:
		w.schedule(event{at: w.now.Add(n.spec.Poll.D()), kind: evPoll, node: n.idx, inc: n.inc})
		n.noteBackpressure()
		n.step(node.Poll{Now: n.now()})
	case evHeartbeat:
		w.schedule(event{at: w.now.Add(n.spec.Heartbeat.D()), kind: evHeartbeat, node: n.idx, inc: n.inc})
		n.step(node.Heartbeat{Now: n.now()})
	case evRepoll:
		if !ev.at.Equal(n.repollAt) {
			return // replaced by a sooner one
		}
		n.repollAt = time.Time{}
		w.cov.hit(SitRateRepoll)
		n.noteBackpressure()
		n.step(node.Poll{Now: n.now()})
	case evWake:
		n.wakePending = false
		n.noteBackpressure()
		n.step(node.Hint{Now: n.now()})
	case evHintArrive:
		n.fillWake()
	case evHandlerDone:
		a := n.attempts[ev.lease]
		if a == nil || a.done {
			return // abandoned, or already returned: the result is dropped
		}
		a.done, a.result = true, ev.result
		done := node.JobDone{Now: n.now(), Lease: ev.lease, Result: ev.result}
		if ev.result == core.ResultSnoozed {
			done.Snooze = a.plan.snooze
		}
		n.step(done)
	case evOpApply:
		n.pendingApply--
		n.apply(ev.op)
		if !ev.op.withheld {
			if res := n.respond(ev.op); res != nil {
				n.deliver(ev.op)
			}
		}
	case evOpResponse:
		n.deliver(ev.op)
	case evDeployStop:
		if n.drv.Stopping() {
			return
		}
		n.step(node.Stop{Now: n.now()})
		for _, wk := range n.walkers {
			if wk != nil && n.up {
				n.stepWalk(wk, node.Stop{Now: n.now()})
			}
		}
		w.schedule(event{at: w.now.Add(n.spec.DrainTimeout.D()), kind: evDrainTimeout, node: n.idx, inc: n.inc})
		w.schedule(event{at: w.at(w.wl.deploys[ev.idx].restart), kind: evStart, node: n.idx, inc: n.inc})
	case evDrainTimeout:
		n.step(node.DrainTimeout{Now: n.now()})
		n.exit()
		return
	case evBatchLinger:
		n.lingerOver(ev.idx)
	case evBatchDone:
		n.callDone(ev.idx)
	case evWalkTick, evWalkDelivered:
		n.handleWalk(ev)
		return
	default:
		panic(fmt.Sprintf("sim: node event kind %d", ev.kind))
	}
	if n.up && n.drv.Drained() {
		w.cov.hit(SitDeployDrained)
		n.exit()
	}
}

// noteBackpressure records a poll that finds no free Worker.
func (n *simNode) noteBackpressure() {
	if !n.drv.Stopping() && n.drv.Free() <= 0 {
		n.w.cov.hit(SitBackpressureIdle)
	}
}

// start begins a new incarnation: a fresh Driver under a new worker id,
// subscribed to Wake-Up Hints, with its tickers running and a first Poll, as
// the production pump starts.
func (n *simNode) start() {
	w := n.w
	if !n.openCheck() {
		return
	}
	n.inc++
	n.worker = job.WorkerID(fmt.Sprintf("n%d.%d", n.idx, n.inc))
	cfg := w.sc.nodeConfig(n.idx, n.worker)
	if w.sc.Fleet != nil {
		cfg.WireNames = fleetWireNames(n.fl.version)
	}
	n.started()
	drv, err := node.New(cfg)
	if err != nil {
		w.failf(ClassCrash, InvPanic, "node %d: %v", n.idx, err)
		return
	}
	if n.crashed {
		w.cov.hit(SitNodeCrashRecovered)
		n.crashed = false
	}
	n.drv, n.up = drv, true
	n.attempts = make(map[job.Lease]*attempt)
	n.batch = batchState{}
	n.cmds, n.head = n.cmds[:0], 0
	n.wakePending = false
	n.repollAt = time.Time{}
	n.withheld, n.pendingApply, n.lastApply = nil, 0, w.now
	n.loaded = nil
	inc := n.inc
	n.unsub = w.st.SubscribeHints(func(queue string) { n.hint(inc, queue) })
	w.schedule(event{at: w.now.Add(n.spec.Poll.D()), kind: evPoll, node: n.idx, inc: n.inc})
	w.schedule(event{at: w.now.Add(n.spec.Heartbeat.D()), kind: evHeartbeat, node: n.idx, inc: n.inc})
	n.startWalkers()
	n.step(node.Poll{Now: n.now()})
}

// caller is the node's Caller over the run's Store.
func (n *simNode) caller(st Store) node.Caller {
	return node.Caller{Worker: n.worker, Store: st, Schedules: st, Retention: st, Observers: st, Fleet: st, Zone: simZone}
}

// simZone loads every zone as UTC: every simulated schedule is in UTC, since
// zone data is I/O, loaded above the determinism boundary in production.
func simZone(string) (*time.Location, error) { return time.UTC, nil }

// exit ends the incarnation: the Driver, its outcome buffer and its handlers
// are gone, and requests not yet at the store never arrive.
func (n *simNode) exit() {
	n.up = false
	n.drv = nil
	n.attempts = nil
	n.walkers = nil
	n.withheld = nil
	n.pendingApply = 0
	if n.unsub != nil {
		n.unsub()
		n.unsub = nil
	}
}

// checkHeld is the Backpressure oracle: a node never holds more Leases than
// its PoolSize.
func (n *simNode) checkHeld() {
	if h := n.drv.Held(); h > n.spec.PoolSize {
		n.w.failf(ClassSafety, InvPoolSize, "node %s holds %d Leases (executing, buffered, reporting) with PoolSize %d", n.worker, h, n.spec.PoolSize)
	}
}

// maxStepCommands bounds the commands one step may carry out at one instant.
const maxStepCommands = 1_000_000

// step feeds one event to the Driver and carries out every command it
// yields, in order, feeding each synchronous store result straight back, as
// the production pump's step does.
func (n *simNode) step(ev node.Event) {
	w := n.w
	w.traceInput(n, driverMachine, ev)
	n.noteFleetEvent(ev)
	from := len(n.cmds)
	n.cmds = n.drv.Step(ev, n.cmds)
	n.noteIssued(n.cmds[from:])
	n.checkHeld()
	for count := 0; n.head < len(n.cmds); count++ {
		if count > maxStepCommands {
			w.failf(w.sc.Level.livelockClass(), InvLivelock, "node %s: more than %d commands at one instant", n.worker, maxStepCommands)
			break
		}
		c := n.cmds[n.head]
		n.cmds[n.head] = nil
		n.head++
		w.traceCommand(n, driverMachine, c)
		if res := n.do(c); res != nil {
			w.traceInput(n, driverMachine, res)
			n.noteFleetEvent(res)
			from := len(n.cmds)
			n.cmds = n.drv.Step(res, n.cmds)
			n.noteIssued(n.cmds[from:])
			n.checkHeld()
		}
	}
	n.cmds, n.head = n.cmds[:0], 0
}

// do carries out one command and returns the event that reports its result
// when the result is known at once, as the production pump's do does.
func (n *simNode) do(c node.Command) node.Event {
	w := n.w
	switch c := c.(type) {
	case node.StoreCommand:
		return n.send(driverMachine, c)
	case node.Forget:
		for _, l := range c.Leases {
			delete(n.attempts, l)
		}
	case node.Execute:
		n.execute(c.Job)
	case node.Abandon:
		if a := n.attempts[c.Lease]; a != nil && a.batched {
			n.leaveBatch(c.Lease, a.wire)
		}
		delete(n.attempts, c.Lease)
		if c.Reason == node.AbandonLeaseLost {
			w.cov.hit(SitLeaseLostAbandon)
		} else {
			w.cov.hit(SitShutdownAbandon)
		}
	case node.PollAfter:
		// One pending re-poll, replaced by each PollAfter, as the
		// production pump keeps it.
		n.repollAt = w.now.Add(c.Delay)
		w.schedule(event{at: n.repollAt, kind: evRepoll, node: n.idx, inc: n.inc})
	case node.SignalCancel:
		w.cov.hit(SitCancelSignalled)
		if a := n.attempts[c.Lease]; a != nil {
			a.signalled = true
		}
		if a := n.attempts[c.Lease]; a != nil && !a.done && !a.plan.ignoreCancel && !a.batched {
			w.schedule(event{at: w.now.Add(a.plan.reaction), kind: evHandlerDone, node: n.idx, inc: n.inc, lease: c.Lease, result: core.ResultFailed})
		}
	default:
		panic(fmt.Sprintf("sim: unknown command %T", c))
	}
	return nil
}

// execute starts the handler of one claimed Attempt: its duration and result
// are drawn from (seed, job, Attempt).
func (n *simNode) execute(j job.Job) {
	w := n.w
	l := j.Lease()
	idx := w.byID[j.ID-1]
	p := planAttempt(w.sc, idx, int32(l.Attempt))
	if !n.handles(j.WireName) {
		// No handler for its Wire Name: the Shell Quarantines it at once.
		p.dur, p.result = 0, core.ResultUnroutable
	}
	if w.sc.Batch != nil && p.result != core.ResultUnroutable && p.result != core.ResultUndecodable {
		// A batch job: a payload that does not decode (Undecodable), or a
		// Wire Name without a handler (Unroutable), is Quarantined before
		// it joins a call.
		n.attempts[l] = &attempt{plan: p, wire: j.WireName, batched: true}
		n.joinBatch(l, j.WireName)
		return
	}
	n.attempts[l] = &attempt{plan: p}
	w.schedule(event{at: w.now.Add(p.dur), kind: evHandlerDone, node: n.idx, inc: n.inc, lease: l, result: p.result})
}

// hint receives a Wake-Up Hint for queue, announced synchronously by the
// store during some call.
func (n *simNode) hint(inc int, queue string) {
	w := n.w
	if !n.up || inc != n.inc || !n.serves[queue] {
		return
	}
	if n.isoDepth > 0 {
		w.cov.hit(SitHintLostIsolated)
		return
	}
	f, ok := w.hintFault(n, queue)
	if !ok {
		n.fillWake()
		return
	}
	switch f.Mode {
	case HintDrop:
		w.hintsDropped++
		w.cov.hit(SitHintDropped)
	case HintDuplicate:
		w.cov.hit(SitHintDuplicated)
		n.fillWake()
		w.schedule(event{at: w.now.Add(f.Delay.D()), kind: evHintArrive, node: n.idx, inc: n.inc})
	case HintDelay:
		w.cov.hit(SitHintDelayed)
		w.schedule(event{at: w.now.Add(f.Delay.D()), kind: evHintArrive, node: n.idx, inc: n.inc})
	}
}

// fillWake puts a wake-up in the single pending slot; a full slot drops it.
func (n *simNode) fillWake() {
	if n.wakePending {
		n.w.cov.hit(SitHintCoalesced)
		return
	}
	n.wakePending = true
	n.w.schedule(event{at: n.w.now, kind: evWake, node: n.idx, inc: n.inc})
}

// hintFault decides the fault of one hint delivery.
func (w *world) hintFault(n *simNode, queue string) (HintFault, bool) {
	if w.chaosOver {
		return HintFault{}, false
	}
	k := hintKey{node: n.idx, inc: n.inc, src: w.src, queue: queue}
	if w.discover {
		f, ok := drawHintFault(w.sc, k, w.queueIx[queue])
		if ok {
			w.faults.Hints = append(w.faults.Hints, f)
		}
		return f, ok
	}
	f, ok := w.index.hints[k]
	return f, ok
}
