package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Nodes is the node registry: which processes run a Client against the
// store, what Worker Groups and Queues each serves, and when each last
// said so, on the store's clock. A Client stamps its row on a beat of its
// own and removes it when it stops; an operator reads the registry to see
// what is running and whether a Queue with ready work has any live node to
// claim it.
//
// The registry holds no judgment beyond the stamp: NodeRecord.Live says
// what counts as live, from the row's own beat and the store's now that
// NodeList answers with.
type Nodes interface {
	// NodeStamp, in one atomic step: writes p.ID's row with p's fields
	// and a heartbeat of the store's now (a first stamp also sets the
	// row's StartedAt to that now; a later one keeps it); removes every
	// row, of any node, whose heartbeat is before now − p.Forget; and
	// returns that now.
	NodeStamp(ctx context.Context, p NodeStampParams) (time.Time, error)

	// NodeRemove removes node id's row. Removing a row the registry does
	// not hold is no error: a node that stops after its row was forgotten
	// has nothing to remove.
	NodeRemove(ctx context.Context, id string) error

	// NodeList returns every row, ordered by ID, with the store's now they
	// were read at.
	NodeList(ctx context.Context) (NodeView, error)
}

// The bounds NodeStampParams.Validate holds a stamp to.
const (
	// MaxNodeHostLen bounds a host name, in bytes.
	MaxNodeHostLen = 255
	// MaxNodeVersionLen bounds a version string, in bytes.
	MaxNodeVersionLen = 64
	// MaxNodeGroups bounds the Worker Groups one stamp lists.
	MaxNodeGroups = 100
	// MaxNodeQueues bounds the Queues one Worker Group lists.
	MaxNodeQueues = 1000
)

// NodeLiveBeats is how many of its own beats a node's heartbeat may age, on
// the store's clock, before the node counts as expired: one late stamp (a
// slow store, a paused process) is not taken for a dead node.
const NodeLiveBeats = 3

// NodeStampParams are the params of Nodes.NodeStamp.
type NodeStampParams struct {
	// ID names the node: unique per Client start. Required, valid as a
	// name (ValidateNodeID).
	ID string
	// Host is the host name the process runs on; at most MaxNodeHostLen
	// bytes, no control characters. Empty when unknown.
	Host string
	// PID is the process id; ≥ 0 (0 when unknown).
	PID int
	// Version is the BackWave release the process runs; at most
	// MaxNodeVersionLen bytes, no control characters.
	Version string
	// Groups are the node's Worker Groups in its Config order: distinct
	// valid names, at most MaxNodeGroups, each listing its Queues (valid
	// names, distinct, at most MaxNodeQueues). None is allowed: a node that
	// only enqueues.
	Groups []NodeGroup
	// Running is how many jobs the node holds now; ≥ 0.
	Running int
	// Beat is how often the node stamps; positive. NodeRecord.Live judges
	// the row by it.
	Beat time.Duration
	// Forget is how old a heartbeat may grow, on the store's clock, before
	// any stamp removes its row; positive and at least NodeLiveBeats
	// beats, so no stamp forgets a live node. It bounds the registry's
	// size as nodes come and go without stopping.
	Forget time.Duration
}

// NodeGroup is one Worker Group of a node's row.
type NodeGroup struct {
	// Name is the Worker Group's name.
	Name string `json:"name"`
	// Queues are the Queues its Dispatch Policy serves, in its order.
	Queues []string `json:"queues"`
}

// NodeRecord is one row of the node registry.
type NodeRecord struct {
	// ID, Host, PID, Version, Groups, Running and Beat are the fields of
	// the row's last stamp.
	ID      string
	Host    string
	PID     int
	Version string
	Groups  []NodeGroup
	Running int
	Beat    time.Duration
	// StartedAt is the store's now at the node's first stamp.
	StartedAt time.Time
	// HeartbeatAt is the store's now at the node's last stamp.
	HeartbeatAt time.Time
}

// Live reports whether the node counts as running at the store's now: its
// last heartbeat is at most NodeLiveBeats of its beats old.
func (r NodeRecord) Live(now time.Time) bool {
	return now.Sub(r.HeartbeatAt) <= NodeLiveBeats*r.Beat
}

// Serves reports whether one of the node's Worker Groups serves queue.
func (r NodeRecord) Serves(queue string) bool {
	for _, g := range r.Groups {
		if slices.Contains(g.Queues, queue) {
			return true
		}
	}
	return false
}

// NodeView is what NodeList answers: the registry's rows and the store's
// now they were read at.
type NodeView struct {
	Now   time.Time
	Nodes []NodeRecord
}

// Validate checks the params of NodeStamp.
func (p NodeStampParams) Validate() error {
	if err := ValidateNodeID(p.ID); err != nil {
		return err
	}
	switch {
	case p.PID < 0:
		return fmt.Errorf("%w: node %s: pid %d (want ≥ 0)", ErrInvalidParams, p.ID, p.PID)
	case p.Running < 0:
		return fmt.Errorf("%w: node %s: running count %d (want ≥ 0)", ErrInvalidParams, p.ID, p.Running)
	case p.Beat <= 0:
		return fmt.Errorf("%w: node %s: beat %v (want > 0)", ErrInvalidParams, p.ID, p.Beat)
	case p.Forget < NodeLiveBeats*p.Beat:
		return fmt.Errorf("%w: node %s: forget horizon %v is below %d beats of %v, so a stamp could forget a live node",
			ErrInvalidParams, p.ID, p.Forget, NodeLiveBeats, p.Beat)
	case len(p.Groups) > MaxNodeGroups:
		return fmt.Errorf("%w: node %s lists %d worker groups (at most %d)", ErrInvalidParams, p.ID, len(p.Groups), MaxNodeGroups)
	}
	if err := validateText("host name", p.Host, MaxNodeHostLen); err != nil {
		return fmt.Errorf("node %s: %w", p.ID, err)
	}
	if err := validateText("version", p.Version, MaxNodeVersionLen); err != nil {
		return fmt.Errorf("node %s: %w", p.ID, err)
	}
	for i, g := range p.Groups {
		if err := g.validate(p.Groups[:i]); err != nil {
			return fmt.Errorf("node %s: %w", p.ID, err)
		}
	}
	return nil
}

// validate checks one Worker Group of a stamp, before the groups earlier
// in the list.
func (g NodeGroup) validate(earlier []NodeGroup) error {
	if err := ValidateName("worker group name", g.Name); err != nil {
		return err
	}
	switch {
	case slices.ContainsFunc(earlier, func(e NodeGroup) bool { return e.Name == g.Name }):
		return fmt.Errorf("%w: worker group %q is listed twice", ErrInvalidParams, g.Name)
	case len(g.Queues) > MaxNodeQueues:
		return fmt.Errorf("%w: worker group %q lists %d queues (at most %d)", ErrInvalidParams, g.Name, len(g.Queues), MaxNodeQueues)
	}
	for i, q := range g.Queues {
		if err := ValidateName("queue name", q); err != nil {
			return fmt.Errorf("worker group %q: %w", g.Name, err)
		}
		if slices.Contains(g.Queues[:i], q) {
			return fmt.Errorf("%w: worker group %q lists queue %q twice", ErrInvalidParams, g.Name, q)
		}
	}
	return nil
}

// ValidateNodeID checks a node id, as NodeStamp and NodeRemove take it: a
// valid name (ValidateName), so at most MaxNameLen bytes.
func ValidateNodeID(id string) error {
	return ValidateName("node id", id)
}
