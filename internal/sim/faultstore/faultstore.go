package faultstore

import (
	"errors"

	"github.com/backwave/backwave/node"
)

// The errors a faulty call answers with.
var (
	// ErrIsolated answers a Rejected call: the node is isolated from the
	// store.
	ErrIsolated = errors.New("faultstore: node isolated from the store")
	// ErrDown answers a call while the store restarts.
	ErrDown = errors.New("faultstore: store restarting")
	// ErrUnknown answers a Lost or an Applied call: the caller cannot know
	// whether it applied.
	ErrUnknown = errors.New("faultstore: store operation outcome unknown")
)

// Fault is what happens to a call (see the package documentation).
type Fault uint8

const (
	// None: the call reaches the store and its answer comes back.
	None Fault = iota
	// Rejected: the call never reaches the store; ErrIsolated.
	Rejected
	// Down: the call never reaches the store; ErrDown.
	Down
	// Lost: the call is not applied; ErrUnknown.
	Lost
	// Applied: the call is applied and its answer lost; ErrUnknown.
	Applied
)

// String names the fault.
func (f Fault) String() string {
	switch f {
	case None:
		return "none"
	case Rejected:
		return "rejected"
	case Down:
		return "down"
	case Lost:
		return "lost"
	case Applied:
		return "applied"
	}
	return "fault(?)"
}

// Refuse answers a call that f keeps from the store (Rejected, Down,
// Lost) with the fault's error (node.Failed) and true; for a call f lets
// reach the store it returns false, and the caller makes the call (a
// node.Caller's Call, with whatever it adds around it) and hands the answer
// to Answer. Refuse and Answer are the one point a fault applies, whatever
// the StoreCommand: no store method is wrapped.
func Refuse(f Fault, c node.StoreCommand) (node.Reply, bool) {
	switch f {
	case Rejected:
		return node.Failed(c, ErrIsolated), true
	case Down:
		return node.Failed(c, ErrDown), true
	case Lost:
		return node.Failed(c, ErrUnknown), true
	}
	return node.Reply{}, false
}

// Answer is what the caller of c, a call that reached the store, is told,
// given the store's answer r: r itself, or under Applied ErrUnknown in
// place of an answer that succeeded (a store's own error comes back as it
// is).
func Answer(f Fault, c node.StoreCommand, r node.Reply) node.Reply {
	if r.Err != nil || f != Applied {
		return r
	}
	return node.Failed(c, ErrUnknown)
}

// Call is Refuse, reach, Answer: the store call of c under f, where reach
// makes the call.
func Call(f Fault, c node.StoreCommand, reach func(node.StoreCommand) node.Reply) node.Reply {
	if r, refused := Refuse(f, c); refused {
		return r
	}
	return Answer(f, c, reach(c))
}
