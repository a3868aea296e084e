package sim

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// Batch handlers in the Simulator (docs/job-shapes.md, Batch Handlers). A
// Scenario with a BatchSpec runs every handled Wire Name's jobs through
// batch calls: each node gathers its executing Attempts per Wire Name with
// the production node.Gather (Size, Linger), a call runs for the drawn
// duration of its first job, and its results are paired with its jobs by
// node.Gather.Deal, as the root package's batch executor pairs them. Each
// job's result is still drawn from (seed, job, Attempt), so a call returns,
// for every job, exactly what that job's own handler would.
//
// A job in a call keeps its Attempt: a cancel signal is noted but does not
// end it early (the call's context lives while any job's does), a lost
// Lease or a shutdown abandons it as usual, and one still waiting for its
// call leaves the call (Gather.Remove).
//
// The oracle, InvBatchOwnResult: the result the Driver got for a batch
// job's Lease is the result drawn for that job's Attempt — never the result
// of another job of its call (a batch job's outcome applied under another
// job's fence). checkDecision then holds the outcome to that result.

// InvBatchOwnResult: a batch job's Attempt finished with another job's
// result.
const InvBatchOwnResult = "batch-own-result"

// Situations of batch calls.
var (
	// SitBatchFull: a call formed with Size jobs.
	SitBatchFull = newSituation("batch-call-full")
	// SitBatchLingered: a call formed at its linger with fewer than Size.
	SitBatchLingered = newSituation("batch-call-lingered")
	// SitBatchLeft: a job waiting for its call left it (lost Lease,
	// shutdown) before the call formed.
	SitBatchLeft = newSituation("batch-member-left")
)

// BatchSpec makes every handler of a Scenario a batch handler.
type BatchSpec struct {
	Size   int `json:"size"`
	Linger Dur `json:"linger"`
}

// drawBatch draws the batch shape of a Scenario from a stream of its own, so
// no other draw of NewScenario moves: about a third of Scenarios batch.
func drawBatch(sc *Scenario) {
	d := newDraw(sc.Seed, tagBatch)
	if !d.chance(0.35) {
		return
	}
	sc.Batch = &BatchSpec{
		Size:   d.between(2, 6),
		Linger: Dur(d.logDur(time.Millisecond, 200*time.Millisecond).Round(time.Millisecond)),
	}
}

// batchCall is one formed call of a node's incarnation.
type batchCall struct {
	wire   string
	leases []job.Lease
}

// batchState is a node incarnation's batch calls.
type batchState struct {
	gathers map[string]*node.Gather
	wires   []string       // by index, for linger events
	index   map[string]int // wires' inverse
	calls   map[int]*batchCall
	next    int
}

// gather returns the node's Gather of wire and its index, made on first
// use.
func (n *simNode) gather(wire string) (*node.Gather, int) {
	b := &n.batch
	if i, ok := b.index[wire]; ok {
		return b.gathers[wire], i
	}
	g, err := node.NewGather(n.w.sc.Batch.Size, n.w.sc.Batch.Linger.D())
	if err != nil {
		panic(fmt.Sprintf("sim: batch spec: %v", err)) // Validate refuses it first
	}
	if plant.Enabled && n.w.sc.Mutation == plant.BatchDealsShifted {
		plantGather(g, n.w.sc.Mutation)
	}
	if b.gathers == nil {
		b.gathers, b.index = make(map[string]*node.Gather), make(map[string]int)
	}
	b.gathers[wire], b.index[wire] = g, len(b.wires)
	b.wires = append(b.wires, wire)
	return g, len(b.wires) - 1
}

// joinBatch puts the executing Attempt of l in its Wire Name's next call.
func (n *simNode) joinBatch(l job.Lease, wire string) {
	w := n.w
	g, gi := n.gather(wire)
	if call := g.Add(w.now, l); call != nil {
		w.cov.hit(SitBatchFull)
		n.runCall(wire, call)
		return
	}
	if g.Waiting() == 1 {
		at, _ := g.Deadline()
		w.schedule(event{at: at, kind: evBatchLinger, node: n.idx, inc: n.inc, idx: gi})
	}
}

// lingerOver forms the call of the gi-th Wire Name's waiting Attempts if
// its linger is over.
func (n *simNode) lingerOver(gi int) {
	wire := n.batch.wires[gi]
	if call := n.batch.gathers[wire].Due(n.w.now); call != nil {
		n.w.cov.hit(SitBatchLingered)
		n.runCall(wire, call)
	}
}

// leaveBatch takes an abandoned Attempt out of the call it waits for.
func (n *simNode) leaveBatch(l job.Lease, wire string) {
	if g := n.batch.gathers[wire]; g != nil && g.Remove(l) {
		n.w.cov.hit(SitBatchLeft)
	}
}

// runCall starts a formed call: it runs for the drawn duration of its first
// job.
func (n *simNode) runCall(wire string, call []job.Lease) {
	b := &n.batch
	if b.calls == nil {
		b.calls = make(map[int]*batchCall)
	}
	id := b.next
	b.next++
	b.calls[id] = &batchCall{wire: wire, leases: call}
	dur := time.Duration(0)
	if a := n.attempts[call[0]]; a != nil {
		dur = a.plan.dur
	}
	n.w.schedule(event{at: n.w.now.Add(dur), kind: evBatchDone, node: n.idx, inc: n.inc, idx: id})
}

// callDone returns a call: the handler answers each job with the result
// drawn for it, and Deal pairs the answers with the jobs' Leases.
func (n *simNode) callDone(id int) {
	c := n.batch.calls[id]
	delete(n.batch.calls, id)
	if c == nil {
		return
	}
	results := make([]core.Result, len(c.leases))
	for i, l := range c.leases {
		if a := n.attempts[l]; a != nil {
			results[i] = a.plan.result
		} else {
			results[i] = core.ResultFailed // abandoned: its result is dropped
		}
	}
	idx, err := n.batch.gathers[c.wire].Deal(c.leases, len(results))
	if err != nil {
		n.w.failf(ClassSafety, InvBatchOwnResult, "node %s: %v", n.worker, err)
		return
	}
	for i, l := range c.leases {
		if !n.up {
			return
		}
		a := n.attempts[l]
		if a == nil || a.done {
			continue
		}
		r := results[idx[i]]
		if r != a.plan.result {
			n.w.failf(ClassSafety, InvBatchOwnResult, "%s: its batch call answered %s, the result of another job of the call; its own is %s", l, r, a.plan.result)
		}
		a.done, a.result = true, r
		done := node.JobDone{Now: n.now(), Lease: l, Result: r}
		if r == core.ResultSnoozed {
			done.Snooze = a.plan.snooze
		}
		n.step(done)
	}
}
