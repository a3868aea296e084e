package sim

import (
	"slices"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Dependency graphs in the workload. Each graph is one insert of new jobs
// that name each other as parents by batch index — a chain, a fan-out, a
// fan-in, a diamond or a random DAG — with each dependent's mode drawn, and
// a graph's roots may also name, by id, jobs inserted earlier (some already
// terminal by then, so their count is taken at the insert). Operators may
// cancel a graph job while it waits, and may requeue a graph job that ended
// Dead-Lettered or Quarantined: its dependents were settled when it ended
// and must not be settled again when it ends a second time.
//
// Graph jobs are workload jobs like any other: they follow the regular jobs
// in the workload's job list, each graph as one batch, its jobs in an order
// where every parent comes first (so the store's InsertOrder is the input
// order and ids follow it).

// GraphWork shapes the Dependency graphs of a run. The zero value has none,
// which is what every Plan written before graphs existed replays with.
type GraphWork struct {
	// Graphs is how many graphs are enqueued over the chaos window.
	Graphs int `json:"graphs"`
	// MaxSize bounds a graph's jobs (at least 2).
	MaxSize int `json:"max_size"`
	// AnyTerminalProb is the share of dependents in mode on-any-terminal;
	// the rest are on-success.
	AnyTerminalProb float64 `json:"any_terminal_prob"`
	// ExistingProb is the share of a graph's roots that also name an
	// earlier job by id.
	ExistingProb float64 `json:"existing_prob"`
	// RequeueProb is the share of graph jobs an operator tries to requeue
	// at a drawn time: if the job is Dead-Lettered or Quarantined then, it
	// goes back to Scheduled.
	RequeueProb float64 `json:"requeue_prob"`
	// WorkflowProb is the share of graphs enqueued as a Workflow (whose
	// roots then name no earlier job: a member's parents are members),
	// and RetryProb the chance that each such Workflow gets operator
	// Workflow Retries at drawn times, with drawn scopes (workflow.go).
	WorkflowProb float64 `json:"workflow_prob,omitempty"`
	RetryProb    float64 `json:"retry_prob,omitempty"`
}

// Graph shapes.
const (
	shapeChain = iota
	shapeFanOut
	shapeFanIn
	shapeDiamond
	shapeRandom
	numShapes
)

// tagGraph keeps graph draws apart from every other kind; its value stands
// clear of the tags of hash.go.
const tagGraph uint64 = 0x6772_6170_68 // "graph"

// drawGraphWork draws the graph shape of one seed's Scenario.
func drawGraphWork(seed uint64) GraphWork {
	d := newDraw(seed, tagGraph)
	if d.chance(0.25) {
		return GraphWork{} // some runs have no graphs at all
	}
	return GraphWork{
		Graphs:          d.between(1, 6),
		MaxSize:         d.between(2, 14),
		AnyTerminalProb: float64(d.intn(6)) / 10,
		ExistingProb:    float64(d.intn(5)) / 10,
		RequeueProb:     float64(d.intn(3)) / 10,
		WorkflowProb:    float64(d.between(4, 10)) / 10,
		RetryProb:       float64(d.between(5, 10)) / 10,
	}
}

// graphParents draws the in-graph parents of a graph of the given shape and
// size, as offsets within the graph, each parent before its dependent.
func graphParents(d *draw, shape, size int) [][]int {
	parents := make([][]int, size)
	switch shape {
	case shapeChain:
		for k := 1; k < size; k++ {
			parents[k] = []int{k - 1}
		}
	case shapeFanOut:
		for k := 1; k < size; k++ {
			parents[k] = []int{0}
		}
	case shapeFanIn:
		for k := range size - 1 {
			parents[size-1] = append(parents[size-1], k)
		}
	case shapeDiamond:
		for k := 1; k < size-1; k++ {
			parents[k] = []int{0}
			parents[size-1] = append(parents[size-1], k)
		}
		if size == 2 {
			parents[1] = []int{0}
		}
	default:
		for k := 1; k < size; k++ {
			for range d.between(0, min(3, k)) {
				p := d.intn(k)
				if !slices.Contains(parents[k], p) {
					parents[k] = append(parents[k], p)
				}
			}
		}
	}
	return parents
}

// expandGraphs appends the Scenario's graphs to the workload: each graph's
// jobs, one batch per graph, their parents and modes, and the operator
// cancels and requeues aimed at them.
func expandGraphs(sc *Scenario, wl *workload) {
	gw := sc.Work.Graphs
	chaos := sc.Chaos.D()
	for g := range gw.Graphs {
		d := newDraw(sc.Seed, tagGraph, uint64(g)+1)
		at := d.dur(0, chaos*85/100).Round(time.Millisecond)
		size := d.between(2, max(gw.MaxSize, 2))
		shape := d.intn(numShapes)
		inGraph := graphParents(d, shape, size)
		b := len(wl.batches)
		asWorkflow := drawWorkflow(sc, wl, b, at)
		wl.batchAt = append(wl.batchAt, at)
		wl.batches = append(wl.batches, nil)
		first := len(wl.jobs)
		for k := range size {
			jd := newDraw(sc.Seed, tagGraph, uint64(g)+1, uint64(k)+1)
			js := jobSpec{
				queue:       jd.intn(len(sc.Queues)),
				maxAttempts: jd.between(1, sc.Work.MaxAttempts),
				batch:       b,
				cancelAt:    -1,
				requeueAt:   -1,
			}
			for _, p := range inGraph[k] {
				js.parents = append(js.parents, first+p)
			}
			if len(inGraph[k]) == 0 && jd.chance(gw.ExistingProb) && !asWorkflow {
				if p, ok := earlierJob(wl, jd, at, first); ok {
					js.parents = append(js.parents, p)
				}
			}
			if len(js.parents) > 0 && jd.chance(gw.AnyTerminalProb) {
				js.mode = job.DependencyOnAnyTerminal
			}
			if jd.chance(sc.Work.CancelProb) {
				js.cancelAt = min(at+jd.dur(0, chaos*3/10).Round(time.Millisecond), chaos-time.Millisecond)
			}
			if jd.chance(gw.RequeueProb) {
				js.requeueAt = min(at+jd.dur(0, chaos/2).Round(time.Millisecond), chaos-time.Millisecond)
			}
			wl.jobs = append(wl.jobs, js)
			wl.batches[b] = append(wl.batches[b], len(wl.jobs)-1)
		}
	}
}

// earlierJob draws a job of the workload (below limit) whose batch is
// inserted strictly before at, so it exists when a graph inserted at at
// names it as a parent.
func earlierJob(wl *workload, d *draw, at time.Duration, limit int) (int, bool) {
	if limit == 0 {
		return 0, false
	}
	for range 8 {
		i := d.intn(limit)
		if wl.batchAt[wl.jobs[i].batch] < at {
			return i, true
		}
	}
	return 0, false
}

// dependencyOf is the Dependency the job of workload index i declares in an
// insert of the batch idxs: in-batch parents by index, earlier ones by id.
func (w *world) dependencyOf(i int, idxs []int) store.Dependency {
	js := &w.wl.jobs[i]
	if len(js.parents) == 0 {
		return store.Dependency{}
	}
	dep := store.Dependency{Mode: js.mode}
	for _, p := range js.parents {
		if k := slices.Index(idxs, p); k >= 0 {
			dep.Parents = append(dep.Parents, store.InBatch(k))
		} else {
			dep.Parents = append(dep.Parents, store.Existing(w.jobs[p].id))
		}
	}
	return dep
}

// requeue is the operator requeue of one graph job: a Dead-Lettered or
// Quarantined job goes back to Scheduled; any other is left alone.
func (w *world) requeue(i int) {
	js := &w.jobs[i]
	if !js.inserted || (js.state != job.StateDeadLettered && js.state != job.StateQuarantined) {
		return
	}
	if len(w.latch.children[js.id]) > 0 {
		w.cov.hit(SitParentRequeued)
	}
	w.workloadCall()
	_, err := w.st.JobRequeue(w.ctx, store.JobRequeueParams{ID: js.id, Actor: "sim"})
	if w.purgedOK(i, err) {
		return // retention purged it first: the operator finds it gone
	}
	w.mustStore(err)
	w.checkSettled()
}
