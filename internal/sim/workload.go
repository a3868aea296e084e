package sim

import (
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// jobSpec is one job of the workload, drawn from (seed, job index).
type jobSpec struct {
	queue       int
	maxAttempts int
	batch       int
	// future is how long after its insert the job is due.
	future time.Duration
	// cancelAt is when an operator cancels the job; negative for never.
	cancelAt time.Duration
	// requeueAt is when an operator requeues the job if it is then
	// Dead-Lettered or Quarantined; negative for never (graph.go).
	requeueAt time.Duration
	// parents are the workload indexes of the job's Dependency parents,
	// and mode its Dependency mode (graph.go).
	parents []int
	mode    job.DependencyMode
	// key is the job's Concurrency Key, "" for none (key.go).
	key string
}

// queueAction is a pause/resume or set-limit Operator Action and its undo.
type queueAction struct {
	queue int
	pause bool // else set-limit
	limit int
	at    time.Duration
	undo  time.Duration
}

// deploy is one graceful restart of a node.
type deploy struct {
	node    int
	stopAt  time.Duration
	restart time.Duration
	// upgrade restarts the node onto version 1 (fleet.go).
	upgrade bool
}

// workload is the Scenario's workload expanded into concrete items.
type workload struct {
	jobs    []jobSpec
	batchAt []time.Duration
	batches [][]int // job indexes per batch, ascending
	actions []queueAction
	deploys []deploy
	// rateActions are the set-rate Operator Actions (rate.go).
	rateActions []rateAction
	// workflowOf maps a batch inserted as a Workflow to its index in
	// workflows; retries are the Workflow Retries aimed at them
	// (workflow.go).
	workflowOf map[int]int
	workflows  []int // the batch of each Workflow
	retries    []wfRetry
}

func expandWorkload(sc *Scenario) *workload {
	chaos := sc.Chaos.D()
	wl := &workload{}
	nb := sc.Work.Batches
	wl.batchAt = make([]time.Duration, nb)
	wl.batches = make([][]int, nb)
	for b := range nb {
		d := newDraw(sc.Seed, tagJob, uint64(1<<32+b))
		base := chaos * 85 / 100 * time.Duration(b) / time.Duration(nb)
		wl.batchAt[b] = base + d.dur(0, chaos/time.Duration(10*nb)).Round(time.Millisecond)
	}
	for i := range sc.Work.Jobs {
		d := newDraw(sc.Seed, tagJob, uint64(i))
		js := jobSpec{
			queue:       d.intn(len(sc.Queues)),
			maxAttempts: d.between(1, sc.Work.MaxAttempts),
			batch:       d.intn(nb),
			cancelAt:    -1,
			requeueAt:   -1,
			key:         keyOf(sc, i),
		}
		if d.chance(sc.Work.FutureProb) {
			js.future = d.dur(time.Millisecond, sc.Work.FutureMax.D()).Round(time.Millisecond)
		}
		if d.chance(sc.Work.CancelProb) {
			at := wl.batchAt[js.batch] + d.dur(0, chaos*3/10).Round(time.Millisecond)
			js.cancelAt = min(at, chaos-time.Millisecond)
		}
		wl.jobs = append(wl.jobs, js)
		wl.batches[js.batch] = append(wl.batches[js.batch], i)
	}
	for k := range sc.Work.QueueActions {
		d := newDraw(sc.Seed, tagQueueAction, uint64(k))
		a := queueAction{queue: d.intn(len(sc.Queues)), pause: d.chance(0.5), limit: d.between(1, 3)}
		a.at = d.dur(0, chaos*6/10).Round(time.Millisecond)
		a.undo = a.at + d.dur(50*time.Millisecond, chaos*3/10).Round(time.Millisecond)
		wl.actions = append(wl.actions, a)
	}
	for k := range sc.Work.Deploys {
		d := newDraw(sc.Seed, tagDeploy, uint64(k))
		n := d.intn(len(sc.Nodes))
		dp := deploy{node: n, stopAt: d.dur(chaos/10, chaos*6/10).Round(time.Millisecond)}
		dp.restart = dp.stopAt + sc.Nodes[n].DrainTimeout.D() + d.dur(0, 500*time.Millisecond).Round(time.Millisecond)
		wl.deploys = append(wl.deploys, dp)
	}
	expandGraphs(sc, wl)
	expandRateActions(sc, wl)
	expandFleet(sc, wl)
	return wl
}

// attemptPlan is what the handler of one Attempt does, drawn from (seed, job
// index, Attempt) — never from draw order.
type attemptPlan struct {
	dur          time.Duration
	result       core.Result
	ignoreCancel bool
	reaction     time.Duration
	// snooze is the delay a snoozing handler asks for.
	snooze time.Duration
}

func planAttempt(sc *Scenario, idx int, attempt int32) attemptPlan {
	d := newDraw(sc.Seed, tagHandler, uint64(idx), uint64(attempt))
	h := &sc.Handler
	p := attemptPlan{dur: d.logDur(h.Min.D(), h.Max.D())}
	if d.chance(h.LongProb) {
		p.dur = d.dur(sc.Lease.D(), 3*sc.Lease.D())
	}
	switch u := d.unit(); {
	case u < h.Succeed:
		p.result = core.ResultSucceeded
	case u < h.Succeed+h.Fail:
		p.result = core.ResultFailed
	case u < h.Succeed+h.Fail+h.Permanent:
		p.result = core.ResultFailedPermanently
	case u < h.Succeed+h.Fail+h.Permanent+h.Snooze:
		p.result = core.ResultSnoozed
		p.snooze = planSnooze(sc, idx, attempt)
	default:
		// The payload does not decode (a Wire Name without a handler is
		// the node's, simNode.execute).
		p.result = core.ResultUndecodable
	}
	p.ignoreCancel = d.chance(h.IgnoreCancel)
	p.reaction = d.dur(0, h.CancelReaction.D())
	return p
}

// maxHandler is the longest any handler runs, counting a cancel reaction.
func (sc *Scenario) maxHandler() time.Duration {
	m := sc.Handler.Max.D()
	if sc.Handler.LongProb > 0 {
		m = max(m, 3*sc.Lease.D())
	}
	if sc.Batch != nil {
		m += sc.Batch.Linger.D() // a batch job may wait its linger before its call runs
	}
	return m
}
