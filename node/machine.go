package node

import "time"

// Machine is a sans-I/O state machine a node runs: the Driver, and each
// Transition Observer's Walker. A machine added later (a node registry
// heartbeat, say) joins them here rather than growing a runtime of its own.
// Every Machine is driven the same way: the Shell runs each on the one
// Shell loop (package shell), its store calls through Caller.Call under the
// one deadline rule (Pacing.CallTimeout), a test drives it by hand on
// Virtual Time the same way (shell.Manual, shell.WalkManual), and the
// Simulator beside the others of its node.
//
// The contract of every Machine is the Driver's:
//   - Step feeds one event and appends to out the commands the caller must
//     carry out, in order. The result of each StoreCommand is fed back as
//     the event its Reply makes (Reply.Event), carrying the command's OpID.
//   - An event the machine does not know, or a result for an operation it
//     does not have in flight, is a broken invariant between the machine
//     and its caller: the first makes Step panic; the second is dropped in
//     a production build and panics in a build that checks invariants
//     (package internal/invariants: -race or the tag backwave_invariants).
//   - Time arrives on each event; the machine never reads a clock.
//   - Stop begins a clean stop, DrainTimeout ends its drain period;
//     Finished then reports when the caller's loop may end.
type Machine interface {
	Step(ev Event, out []Command) []Command
	// LeaseDuration is the length of the Leases the machine's store
	// commands take and renew: it sets their deadline (Pacing.CallTimeout).
	LeaseDuration() time.Duration
	// Finished reports whether a stopped machine has nothing left to do.
	Finished() bool
}

var (
	_ Machine = (*Driver)(nil)
	_ Machine = (*Walker)(nil)
)
