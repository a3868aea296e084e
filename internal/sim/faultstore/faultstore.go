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

// Call carries out the store call of c under f: reach makes the call (a
// node.Caller's Call, with whatever the caller adds around it) and is
// called only when f lets the call reach the store. The answer is reach's,
// or the fault's error in its place (node.Failed). It is the one point a
// fault applies, whatever the StoreCommand: no store method is wrapped.
func Call(f Fault, c node.StoreCommand, reach func(node.StoreCommand) node.Reply) node.Reply {
	switch f {
	case Rejected:
		return node.Failed(c, ErrIsolated)
	case Down:
		return node.Failed(c, ErrDown)
	case Lost:
		return node.Failed(c, ErrUnknown)
	}
	r := reach(c)
	if r.Err != nil || f != Applied {
		return r
	}
	return node.Failed(c, ErrUnknown)
}
