package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

// evKind is the kind of a scheduled event.
type evKind uint8

const (
	evEnqueue evKind = iota + 1
	evCancel
	evQueueAction
	evQueueUndo
	evDeployStop
	evDrainTimeout
	evStart
	evPoll
	evHeartbeat
	evWake
	evHintArrive
	evHandlerDone
	evOpApply
	evOpResponse
	evCrash
	evIsolate
	evHeal
	evSkew
	evChaosEnd
	evDeadline
	evStoreRestart
	evStoreUp
	evRequeue
	evScheduleRemove
	evRateAction
	evRateUndo
	evRepoll
	evWalkTick
	evWalkDelivered
	evObserverDeadline
	evWorkflowRetry
	evMigrate
	evMigrationCheck
	evBatchLinger
	evBatchDone
	evKinds // one past the last kind: every kind below it has a name in evNames
)

// event is one entry of the event queue, ordered by (at, seq).
type event struct {
	at     time.Time
	seq    uint64
	kind   evKind
	node   int
	inc    int
	idx    int
	lease  job.Lease
	result core.Result
	op     *op
	// delivery is a simulated Transition Observer callback's result.
	delivery *delivery
}

// eventQueue is a binary min-heap of events by (at, seq).
type eventQueue []event

func (q eventQueue) less(i, j int) bool {
	if c := q[i].at.Compare(q[j].at); c != 0 {
		return c < 0
	}
	return q[i].seq < q[j].seq
}

func (q *eventQueue) push(e event) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = event{}
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// jobState is what the oracles track of one workload job.
type jobState struct {
	id         job.ID
	state      job.State
	maxAttempt job.Attempt
	// outcomes lists the Attempts whose outcome the store applied.
	outcomes []job.Attempt
	// leaseExp is the store's expiry of the current Lease as the claim and
	// renewals set it.
	leaseExp time.Time
	inserted bool
	// due is when the job may next be claimed, as its insert, retry,
	// expiry or Relinquish set it.
	due time.Time
	// cause is the Retry Cause the sticky rule says the job carries.
	cause           job.RetryCause
	cancelRequested bool
	// bases lists, oldest first, the Attempt each operator requeue left the
	// job at: each starts a new life whose attempt budget counts Attempts
	// above it.
	bases []job.Attempt
	// retriedAbove is the last Attempt charged before the job's latest
	// Workflow Retry (0 if never retried): an outcome of any Attempt up to
	// it is of a life the retry ended.
	retriedAbove job.Attempt
	// snoozed lists, oldest first, the Attempts whose snooze the store
	// applied (snooze.go).
	snoozed []job.Attempt
}

// baseOf returns the base of the life Attempt a was charged in: the last
// requeue below a, 0 before any. A requeue starts a new budget for the
// Attempts it is followed by; an Attempt charged before it keeps the
// ceiling of its own life, which is the one the Driver decided against.
func (js *jobState) baseOf(a job.Attempt) job.Attempt {
	var b job.Attempt
	for _, x := range js.bases {
		if x < a {
			b = x
		}
	}
	return b
}

// eventBudget bounds one run; a run past it is a harness failure.
const eventBudget = 20_000_000

// world is one run: N nodes, one Store, one event queue, the oracles.
type world struct {
	sc       *Scenario
	wl       *workload
	discover bool
	faults   FaultMap // the map consulted (replay) or recorded (discovery)
	index    *faultIndex

	ctx   context.Context
	clock *vtime.Manual
	start time.Time
	now   time.Time
	st    Store
	// precision is Options.StorePrecision (storeNow, storeDur).
	precision time.Duration
	q         eventQueue
	seq       uint64

	nodes   []*simNode
	jobs    []jobState
	byID    []int // store id - 1 → workload index
	queueIx map[string]int
	limits  []int
	paused  []bool
	running []int
	rates   []rateTrack // the Rate oracle's counts (rate.go)

	live         int // inserted jobs not terminal
	workloadLeft int // workload events not yet processed
	chaosOver    bool
	storeDown    int // store outages in progress
	live0        int // live jobs when the chaos window ended
	done         bool
	deadline     time.Time
	bound        time.Duration

	oracles runOracles // the run's own registered oracles (oracles.go)
	scope   []string   // the Queues the current claim or expiry sweep names
	src     OpRef      // the cause of hints the current store call announces
	srcSeq  int        // the workload call counter

	log          func(string)
	events       int
	trace        uint64
	cov          Coverage
	fail         *Failure
	hintsDropped int

	latch latchModel // the Dependency oracles' model (latch.go)
	obs   obsWorld   // the Transition Observer oracles (observer.go)
	wf    wfModel    // the Workflows and their retries (workflow.go)
	sched schedWorld // Recurring Schedules and retention (schedule.go)
	fl    fleetWorld // the Mixed-Version Fleet (fleet.go)
}

// Report is what a run produced.
type Report struct {
	// Plan replays the run exactly: a discovery run's Report carries the
	// Fault Map it recorded.
	Plan Plan
	// TraceHash digests every event, command and store result in order: two
	// runs with the same hash took the same path.
	TraceHash uint64
	// Events is how many events the run processed.
	Events int
	// Virtual is how much Virtual Time the run covered.
	Virtual time.Duration
	// Drained is true when every job ended terminal.
	Drained bool
	// Bound is the Drain-Liveness bound derived at the end of the chaos
	// window (liveness.go), or at the end of the schedules' tail.
	Bound time.Duration
	// Tail is how long the Recurring Schedules outlived the chaos window
	// (under Recoverable); the Drain-Liveness bound runs from its end.
	Tail time.Duration
	// States counts the jobs per final state.
	States map[job.State]int
	// Coverage is what this run reached.
	Coverage Coverage
}

// Options tune a run.
type Options struct {
	// Log, if set, receives one line per event, Driver input, command and
	// state change, in order: the run's story, for reading a replay.
	Log func(line string)
	// Store, if set, opens the store the run drives in place of the
	// In-Memory Store (NewMemStore): the same Plan replayed on another
	// implementation of the Storage Contract. An error ends the run before
	// it starts.
	Store func(env StoreEnv) (Store, error)
	// StorePrecision, if positive, quantizes Virtual Time as the store sees
	// it: the store's clock reads Virtual Time truncated to it, and every
	// due time, Lease length, retry delay and retention horizon the run
	// hands the store is truncated to it too, as are the oracles' own
	// expectations. A store that keeps coarser times than Virtual Time's
	// nanoseconds (SQLite keeps microseconds) then decides exactly as
	// memstore does at that precision; at nanoseconds, two instants within
	// one of its ticks would compare equal in it and not in memstore. Zero
	// (the default) keeps nanoseconds. Node clocks are never quantized.
	StorePrecision time.Duration
}

// RunWith is Run with Options.
func RunWith(p Plan, opts Options) (Report, error) { return run(p, true, opts) }

// Run runs one Plan to its end and returns its Report. A tripped invariant
// returns a *Failure (with the Report still filled, so its Plan can be
// saved); nothing panics out of Run and nothing exits the process: a panic
// anywhere below becomes a ClassCrash failure.
func Run(p Plan) (Report, error) { return run(p, true, Options{}) }

// RunUnrecovered is Run without the panic recovery: a panic escapes with its
// stack. It is for debugging a crash-class failure, never for the VOPR loop.
func RunUnrecovered(p Plan, opts Options) (Report, error) { return run(p, false, opts) }

func run(p Plan, recoverPanics bool, opts Options) (rep Report, err error) {
	if err := p.Validate(); err != nil {
		return Report{Plan: p}, err
	}
	w, err := newWorld(&p, opts)
	if err != nil {
		return Report{Plan: p}, err
	}
	w.log = opts.Log
	if recoverPanics {
		defer func() {
			if v := recover(); v != nil {
				w.failf(ClassCrash, InvPanic, "panic: %v", v)
				rep, err = w.report(p), w.fail
			}
		}()
	}
	w.run()
	rep = w.report(p)
	if w.fail != nil {
		return rep, w.fail
	}
	return rep, nil
}

func newWorld(p *Plan, opts Options) (*world, error) {
	sc := p.Scenario
	w := &world{
		sc:       &sc,
		discover: p.Discover,
		ctx:      context.Background(),
		start:    vtime.Epoch,
		now:      vtime.Epoch,
		queueIx:  make(map[string]int),
	}
	if p.Discover {
		drawEpisodes(w.sc, &w.faults)
	} else {
		w.faults = p.Faults.Clone()
	}
	w.index = newFaultIndex(&w.faults)
	w.clock = vtime.NewManual(vtime.Epoch)
	open := opts.Store
	if open == nil {
		open = NewMemStore
	}
	if opts.StorePrecision < 0 {
		return nil, fmt.Errorf("sim: negative store precision %v", opts.StorePrecision)
	}
	w.precision = opts.StorePrecision
	env := StoreEnv{Clock: w.clock, Feed: w.onTransition, Mutation: sc.Mutation, Precision: w.precision}
	if w.precision > 0 {
		env.Clock = truncClock{clock: w.clock, precision: w.precision}
	}
	st, err := open(env)
	if err != nil {
		return nil, err
	}
	w.st = st
	w.wl = expandWorkload(w.sc)
	w.jobs = make([]jobState, len(w.wl.jobs))
	for i, q := range sc.Queues {
		w.queueIx[q.Name] = i
		w.limits = append(w.limits, q.Limit)
	}
	w.paused = make([]bool, len(sc.Queues))
	w.running = make([]int, len(sc.Queues))
	for i := range sc.Nodes {
		w.nodes = append(w.nodes, newSimNode(w, i))
	}
	w.setupObservers()
	w.oracles = newOracles()
	return w, nil
}

// at returns the virtual instant offset d from the start.
func (w *world) at(d time.Duration) time.Time { return w.start.Add(d) }

// schedule queues an event.
func (w *world) schedule(e event) {
	w.seq++
	e.seq = w.seq
	w.q.push(e)
}

// logf writes one line of the run's story when a Log is set.
func (w *world) logf(format string, args ...any) {
	if w.log != nil {
		w.log(fmt.Sprintf("%12v ", w.now.Sub(w.start)) + fmt.Sprintf(format, args...))
	}
}

func (w *world) failf(class Class, inv, format string, args ...any) {
	if w.fail != nil {
		return
	}
	w.logf("FAILURE %s %s: %s", class, inv, fmt.Sprintf(format, args...))
	w.fail = &Failure{Class: class, Invariant: inv, At: w.now.Sub(w.start), Detail: fmt.Sprintf(format, args...)}
}

// setup queues the workload, the node starts and the fault episodes.
func (w *world) setup() {
	for _, q := range w.sc.Queues {
		if q.Limit > 0 {
			w.mustStore(w.st.QueueSetLimit(w.ctx, store.QueueSetLimitParams{Queue: q.Name, Limit: q.Limit}))
		}
	}
	for b, at := range w.wl.batchAt {
		if len(w.wl.batches[b]) > 0 {
			w.workload(event{at: w.at(at), kind: evEnqueue, idx: b})
		}
	}
	for i, js := range w.wl.jobs {
		if js.cancelAt >= 0 {
			w.workload(event{at: w.at(js.cancelAt), kind: evCancel, idx: i})
		}
		if js.requeueAt >= 0 {
			w.workload(event{at: w.at(js.requeueAt), kind: evRequeue, idx: i})
		}
	}
	w.setupRates()
	w.setupKeys()
	w.setupWorkflows()
	for k, a := range w.wl.actions {
		w.workload(event{at: w.at(a.at), kind: evQueueAction, idx: k})
		w.workload(event{at: w.at(a.undo), kind: evQueueUndo, idx: k})
	}
	for k, dp := range w.wl.deploys {
		w.schedule(event{at: w.at(dp.stopAt), kind: evDeployStop, node: dp.node, idx: k})
	}
	for i, ns := range w.sc.Nodes {
		w.schedule(event{at: w.at(ns.StartAt.D()), kind: evStart, node: i, inc: 0})
	}
	for k, f := range w.faults.Crashes {
		w.schedule(event{at: w.at(f.At.D()), kind: evCrash, node: f.Node, idx: k})
	}
	for k, f := range w.faults.Isolations {
		w.schedule(event{at: w.at(f.At.D()), kind: evIsolate, node: f.Node, idx: k})
	}
	for k, f := range w.faults.Skews {
		w.schedule(event{at: w.at(f.At.D()), kind: evSkew, node: f.Node, idx: k})
	}
	for k, f := range w.faults.Restarts {
		w.schedule(event{at: w.at(f.At.D()), kind: evStoreRestart, idx: k})
	}
	w.setupSchedules()
	w.setupFleet()
	w.schedule(event{at: w.at(w.sc.Chaos.D()), kind: evChaosEnd})
}

// workload queues a workload event, which keeps the run going until it is
// processed.
func (w *world) workload(e event) {
	w.workloadLeft++
	w.schedule(e)
}

func (w *world) run() {
	w.setup()
	for len(w.q) > 0 && w.fail == nil {
		ev := w.q.pop()
		if ev.at.After(w.now) {
			if err := w.clock.Set(ev.at); err != nil {
				panic(err)
			}
			w.now = ev.at
		}
		w.events++
		w.traceEvent(&ev)
		w.handle(&ev)
		if w.fail != nil || w.done {
			return
		}
		if w.workloadLeft == 0 && w.live == 0 && w.chaosOver && !w.fl.checkPending {
			if !w.observersCaughtUp() {
				w.waitObservers()
				continue
			}
			w.finish(true)
			return
		}
		if w.events > eventBudget {
			w.failf(ClassCrash, InvEventBudget, "more than %d events", eventBudget)
			return
		}
	}
}

func (w *world) handle(ev *event) {
	switch ev.kind {
	case evEnqueue:
		w.workloadLeft--
		w.enqueue(ev.idx)
	case evCancel:
		w.workloadLeft--
		w.cancel(ev.idx)
	case evRequeue:
		w.workloadLeft--
		w.requeue(ev.idx)
	case evWorkflowRetry:
		w.workloadLeft--
		w.retryWorkflow(ev.idx)
	case evQueueAction, evQueueUndo:
		w.workloadLeft--
		w.queueAction(ev.idx, ev.kind == evQueueUndo)
	case evScheduleRemove:
		w.workloadLeft--
		w.removeSchedule(ev.idx)
	case evRateAction, evRateUndo:
		w.workloadLeft--
		w.rateAction(ev.idx, ev.kind == evRateUndo)
	case evDeadline:
		if w.workloadLeft == 0 && w.live == 0 {
			return // drained: the Observers' own deadline or the Migration-Liveness check is the one that counts
		}
		w.finish(false)
	case evObserverDeadline:
		w.checkObserverLiveness()
		if w.fail == nil {
			w.finish(true)
		}
	case evMigrate:
		w.migrate()
	case evMigrationCheck:
		w.fl.checkPending = false
		if w.migrationCheckDue() {
			w.checkMigration()
		}
	case evChaosEnd:
		w.endChaos()
	case evCrash:
		w.crash(ev.idx)
	case evIsolate:
		w.isolate(ev.idx)
	case evHeal:
		w.nodes[ev.node].heal(false)
	case evStoreRestart:
		w.restartStore(ev.idx)
	case evStoreUp:
		if w.storeDown > 0 {
			w.storeDown--
		}
	case evSkew:
		if !w.chaosOver {
			w.nodes[ev.node].skew = w.faults.Skews[ev.idx].Offset.D()
			w.cov.hit(SitSkewJump)
		}
	default:
		w.nodes[ev.node].handle(ev)
	}
}

// mustStore fails the run on an error from a store call the Simulator made
// correctly.
func (w *world) mustStore(err error) {
	if err != nil {
		w.failf(ClassSafety, InvStoreError, "%v", err)
	}
}

// enqueue inserts one workload batch.
func (w *world) enqueue(b int) {
	idxs := w.wl.batches[b]
	jobs := make([]store.NewJob, len(idxs))
	for k, i := range idxs {
		js := &w.wl.jobs[i]
		jobs[k] = store.NewJob{WireName: w.wireOf(i), Queue: w.sc.Queues[js.queue].Name, MaxAttempts: js.maxAttempts,
			Dependency: w.dependencyOf(i, idxs), ConcurrencyKey: js.key}
		w.jobs[i].due = w.storeNow()
		if js.future > 0 {
			jobs[k].ScheduledAt = w.storeNow().Add(js.future)
			w.jobs[i].due = jobs[k].ScheduledAt
		}
		w.byID = append(w.byID, i)
		w.jobs[i].id = job.ID(len(w.byID))
	}
	w.register(idxs)
	w.workloadCall()
	ids, err := w.insertBatch(b, jobs)
	w.mustStore(err)
	w.checkSettled()
	for k, id := range ids {
		if id != w.jobs[idxs[k]].id {
			w.failf(ClassCrash, InvStoreError, "insert returned id %d, expected %d", id, w.jobs[idxs[k]].id)
		}
	}
}

// workloadCall names the next workload store call as the source of the hints
// it announces.
func (w *world) workloadCall() {
	w.srcSeq++
	w.src = OpRef{Node: -1, Op: uint64(w.srcSeq)}
}

// cancel is the operator cancel of one job: a live job is asked to stop, a
// terminal one is left alone.
func (w *world) cancel(i int) {
	js := &w.jobs[i]
	if !js.inserted || js.state.Terminal() {
		return
	}
	if js.state == job.StateRunning {
		w.cov.hit(SitCancelRequestedRunning)
	}
	w.workloadCall()
	js.cancelRequested = true
	_, err := w.st.JobCancel(w.ctx, store.JobCancelParams{ID: js.id})
	w.mustStore(err)
	w.checkSettled()
}

// queueAction applies or undoes one pause or set-limit Operator Action.
func (w *world) queueAction(k int, undo bool) {
	a := &w.wl.actions[k]
	name := w.sc.Queues[a.queue].Name
	w.workloadCall()
	switch {
	case a.pause && !undo:
		w.paused[a.queue] = true
		w.mustStore(w.st.QueuePause(w.ctx, store.QueueParams{Queue: name}))
	case a.pause:
		w.paused[a.queue] = false
		w.mustStore(w.st.QueueResume(w.ctx, store.QueueParams{Queue: name}))
	default:
		limit := a.limit
		if undo {
			limit = w.sc.Queues[a.queue].Limit
		}
		w.limits[a.queue] = limit
		w.mustStore(w.st.QueueSetLimit(w.ctx, store.QueueSetLimitParams{Queue: name, Limit: limit}))
	}
}

func (w *world) report(p Plan) Report {
	out := p
	out.Discover = false
	out.Faults = w.faults.Clone()
	out.Faults.sort()
	rep := Report{
		Plan:      out,
		TraceHash: w.trace,
		Events:    w.events,
		Virtual:   w.now.Sub(w.start),
		Drained:   w.live == 0 && w.workloadLeft == 0,
		Bound:     w.bound,
		Tail:      w.sched.tail,
		States:    make(map[job.State]int),
		Coverage:  w.cov,
	}
	for i := range w.jobs {
		if w.jobs[i].inserted {
			rep.States[w.jobs[i].state]++
		}
	}
	rep.Coverage.Runs = 1
	rep.Coverage.seal()
	return rep
}
