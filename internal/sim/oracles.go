package sim

import (
	"fmt"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// oracle is one check of the store calls nodes make, as one run holds it:
// what it does around each call at the one hook point (checked.go,
// simNode.reach), switching on the StoreCommand, with whatever state of
// its own it keeps between before and after, or across the run.
type oracle interface {
	// before runs when the call reaches the store, before it is made, on
	// the Command as the Driver emitted it (with the Simulator's planted
	// edits): it may read the store's rows as they stand.
	before(w *world, n *simNode, c node.StoreCommand)
	// after runs once the store answered without error, on the Command as
	// the store was handed it and its Reply.
	after(w *world, n *simNode, o *op, c node.StoreCommand, r *node.Reply)
}

// edgeChecker is an oracle that also sees every state change the store
// applies (world.onTransition, the transition feed), after the feed's own
// bookkeeping and before the fixed checks there.
type edgeChecker interface {
	edge(w *world, id job.ID, e core.Edge, a job.Attempt)
}

// endChecker is an oracle that also checks the end of the run
// (world.finish), before the fixed end-of-run checks; drained is true when
// every job ended terminal.
type endChecker interface {
	end(w *world, drained bool)
}

// oracleDef is a registered oracle: the invariant it holds (or what it
// notes), the Situations its checks reach — declared beside it
// (newSituation), or among the fixed ones (coverage.go) — and how a run
// makes its own.
type oracleDef struct {
	name       string
	situations []Situation
	new        func() oracle
}

// oracleDefs are the registered oracles, in registration order: the order
// they check in. Registered from init functions only, never changed after.
// A new oracle is one file: an init that registers it.
var oracleDefs []oracleDef

// registerOracle adds d; a name registered twice, a missing constructor
// or a Situation out of range is a programming error.
func registerOracle(d oracleDef) {
	if d.new == nil {
		panic(fmt.Sprintf("sim: oracle %q has no constructor", d.name))
	}
	for _, x := range oracleDefs {
		if x.name == d.name {
			panic(fmt.Sprintf("sim: oracle %q registered twice", d.name))
		}
	}
	for _, s := range d.situations {
		if s >= numSituations {
			panic(fmt.Sprintf("sim: oracle %q declares an unknown Situation %d", d.name, s))
		}
	}
	oracleDefs = append(oracleDefs, d)
}

// runOracles are a run's own oracles, and those of them that see the
// transition feed and the end of the run, in registration order.
type runOracles struct {
	all   []oracle
	edges []func(w *world, id job.ID, e core.Edge, a job.Attempt)
	ends  []func(w *world, drained bool)
}

// newOracles makes a run's own oracles.
func newOracles() runOracles {
	var out runOracles
	out.all = make([]oracle, len(oracleDefs))
	for i, d := range oracleDefs {
		o := d.new()
		out.all[i] = o
		switch o := o.(type) {
		case oracleHooks: // only the hooks it has
			if o.onEdge != nil {
				out.edges = append(out.edges, o.onEdge)
			}
			if o.onEnd != nil {
				out.ends = append(out.ends, o.onEnd)
			}
			continue
		case edgeChecker:
			out.edges = append(out.edges, o.edge)
		}
		if o, ok := o.(endChecker); ok {
			out.ends = append(out.ends, o.end)
		}
	}
	return out
}

// oracleHooks is an oracle made of funcs, any of them nil: for an oracle
// that keeps no state of its own. pre and post run around each store call;
// onEdge on each state change the store applies (edgeChecker), onEnd at the
// end of the run (endChecker).
type oracleHooks struct {
	pre    func(w *world, n *simNode, c node.StoreCommand)
	post   func(w *world, n *simNode, o *op, c node.StoreCommand, r *node.Reply)
	onEdge func(w *world, id job.ID, e core.Edge, a job.Attempt)
	onEnd  func(w *world, drained bool)
}

func (h oracleHooks) before(w *world, n *simNode, c node.StoreCommand) {
	if h.pre != nil {
		h.pre(w, n, c)
	}
}

func (h oracleHooks) after(w *world, n *simNode, o *op, c node.StoreCommand, r *node.Reply) {
	if h.post != nil {
		h.post(w, n, o, c, r)
	}
}

// stateless registers an oracle of hooks alone.
func stateless(name string, situations []Situation, h oracleHooks) {
	registerOracle(oracleDef{name: name, situations: situations, new: func() oracle { return h }})
}
