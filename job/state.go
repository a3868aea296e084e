package job

import (
	"fmt"
	"strconv"
)

// State is where a job is in its lifecycle.
type State uint8

const (
	// StateUnknown is the zero value; no stored job is in it. The Core's edge
	// table uses it as the origin of an insert.
	StateUnknown State = iota
	// StateScheduled is a live job with a due time, waiting to be claimed.
	StateScheduled
	// StateAwaitingParent is a job whose Dependency parent set is not yet
	// fully terminal.
	StateAwaitingParent
	// StateRunning is a job leased to a worker for its current Attempt.
	StateRunning
	// StateSucceeded is terminal: an Attempt succeeded.
	StateSucceeded
	// StateDeadLettered is terminal: the job exhausted its attempt ceiling,
	// or its handler failed it permanently (TerminalCause says which).
	StateDeadLettered
	// StateCancelled is terminal: deliberate non-execution, with a recorded
	// CancelCause.
	StateCancelled
	// StateQuarantined is terminal until an operator requeues it: the job
	// could not be routed (no handler for its Wire Name) or decoded
	// (TerminalCause says which).
	StateQuarantined
)

// States lists every stored state in lifecycle order.
var States = []State{
	StateScheduled, StateAwaitingParent, StateRunning, StateSucceeded,
	StateDeadLettered, StateCancelled, StateQuarantined,
}

var stateNames = [...]string{
	StateUnknown:        "unknown",
	StateScheduled:      "scheduled",
	StateAwaitingParent: "awaiting_parent",
	StateRunning:        "running",
	StateSucceeded:      "succeeded",
	StateDeadLettered:   "dead_lettered",
	StateCancelled:      "cancelled",
	StateQuarantined:    "quarantined",
}

// String returns the stored name of the state, e.g. "dead_lettered".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// ParseState is the inverse of State.String for stored states.
func ParseState(s string) (State, error) {
	for _, st := range States {
		if stateNames[st] == s {
			return st, nil
		}
	}
	return StateUnknown, fmt.Errorf("job: unknown state %q", s)
}

// Terminal reports whether no automatic path moves a job out of the state:
// Succeeded, Dead-Lettered, Cancelled and Quarantined. (Operator Actions may
// requeue a Dead-Lettered or Quarantined job.)
func (s State) Terminal() bool {
	switch s {
	case StateSucceeded, StateDeadLettered, StateCancelled, StateQuarantined:
		return true
	default:
		return false
	}
}

// Live reports whether the job still waits for or is doing work.
func (s State) Live() bool {
	switch s {
	case StateScheduled, StateAwaitingParent, StateRunning:
		return true
	default:
		return false
	}
}
