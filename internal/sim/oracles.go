package sim

import (
	"fmt"

	"github.com/backwave/backwave/node"
)

// oracle is one check of the store calls nodes make, as a registered value:
// its name, the Situations it reaches, and what it does around each call
// at the one hook point (checked.go, simNode.reach), switching on the
// StoreCommand. A new oracle is one file: an init that registers it, its
// Situations declared beside its check.
type oracle struct {
	// name is the invariant it holds, or what it notes.
	name string
	// situations are the Situations its checks reach (coverage.go).
	situations []Situation
	// before, if set, runs when the call reaches the store, before it is
	// made, on the Command as the Driver emitted it (with the Simulator's
	// planted edits): it reads the store's rows as they stand and returns
	// what after needs.
	before func(w *world, n *simNode, c node.StoreCommand) any
	// after, if set, runs once the store answered without error, on the
	// Command as the store was handed it and its Reply, with before's
	// value.
	after func(w *world, n *simNode, o *op, c node.StoreCommand, r *node.Reply, pre any)
}

// oracles are the registered oracles, in registration order: the order
// they check in. Registered from init functions only, never changed after.
var oracles []oracle

// registerOracle adds o; a name registered twice, an oracle with no hook
// or a Situation out of range is a programming error.
func registerOracle(o oracle) {
	if o.before == nil && o.after == nil {
		panic(fmt.Sprintf("sim: oracle %q hooks nothing", o.name))
	}
	for _, x := range oracles {
		if x.name == o.name {
			panic(fmt.Sprintf("sim: oracle %q registered twice", o.name))
		}
	}
	for _, s := range o.situations {
		if s >= numSituations {
			panic(fmt.Sprintf("sim: oracle %q declares an unknown Situation %d", o.name, s))
		}
	}
	oracles = append(oracles, o)
}
