package backwave

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/store"
)

// NodeInfo is one row of the node registry: a started Client, the process
// it runs in, and its last stamp (Config.NodeHeartbeat).
type NodeInfo struct {
	// ID is the row's id, fresh at each Client start
	// (Client.NodeRegistryID).
	ID string
	// Host and PID are the host name and process id of the Client's
	// process; Host is empty when the host name was unknown.
	Host string
	PID  int
	// Version is the BackWave release the process runs.
	Version string
	// Groups are the Client's Worker Groups with the Queues each serves,
	// in its Config order; none for a Client that only enqueues.
	Groups []NodeGroup
	// Running is how many jobs the Client held at its last stamp.
	Running int
	// Beat is how often the Client stamps its row.
	Beat time.Duration
	// StartedAt and HeartbeatAt are the store's clock at the row's first
	// and last stamp.
	StartedAt   time.Time
	HeartbeatAt time.Time
	// Live is whether the last stamp is at most NodeLiveBeats beats old
	// at NodesView.Now; an expired node stopped stamping without Stop (its
	// process died, or cannot reach the store) and claims nothing.
	Live bool
}

// NodeGroup is one Worker Group of a node: its name and the Queues its
// Dispatch Policy serves, in its order.
type NodeGroup struct {
	Name   string
	Queues []string
}

// QueueNodes is one Queue and how many live nodes serve it.
type QueueNodes struct {
	Queue string
	// LiveNodes counts the live nodes with a Worker Group serving the
	// Queue; 0 means nothing runs its jobs until a node that serves it
	// starts.
	LiveNodes int
}

// NodesView is what Admin.Nodes answers.
type NodesView struct {
	// Now is the store's clock when the registry was read: what Live and
	// a heartbeat's age are measured against.
	Now time.Time
	// Nodes are the registry's rows, ordered by ID.
	Nodes []NodeInfo
	// Queues are every Queue the store knows and every Queue a listed node
	// serves, ordered by name, each with its live nodes.
	Queues []QueueNodes
}

// Served reports whether some live node serves queue.
func (v NodesView) Served(queue string) bool {
	i, ok := slices.BinarySearchFunc(v.Queues, queue, func(q QueueNodes, name string) int {
		return strings.Compare(q.Queue, name)
	})
	return ok && v.Queues[i].LiveNodes > 0
}

// Nodes reads the node registry: every started Client's row, whether it is
// live on the store's clock, and, per Queue, how many live nodes serve it.
// A Monitor read (the dashboard and MCP gate it by View); it reads the
// store, never a replica, since a lagging heartbeat would show a live node
// expired.
func (a *Admin) Nodes(ctx context.Context) (NodesView, error) {
	v, err := a.store.NodeList(ctx)
	if err != nil {
		return NodesView{}, fmt.Errorf("backwave: read the node registry: %w", err)
	}
	qs, err := a.store.QueueList(ctx)
	if err != nil {
		return NodesView{}, fmt.Errorf("backwave: read the node registry: list queues: %w", err)
	}
	return nodesViewOf(v, qs), nil
}

// nodesViewOf builds NodesView from the registry and the Queue list.
func nodesViewOf(v store.NodeView, qs []store.QueueInfo) NodesView {
	out := NodesView{Now: v.Now, Nodes: make([]NodeInfo, len(v.Nodes))}
	// live counts each Queue's live nodes; every Queue named has a key.
	live := make(map[string]int, len(qs))
	for _, q := range qs {
		live[q.Name] = 0
	}
	for i, r := range v.Nodes {
		n := NodeInfo{
			ID: r.ID, Host: r.Host, PID: r.PID, Version: r.Version, Groups: make([]NodeGroup, len(r.Groups)),
			Running: r.Running, Beat: r.Beat, StartedAt: r.StartedAt, HeartbeatAt: r.HeartbeatAt, Live: r.Live(v.Now),
		}
		served := make(map[string]bool)
		for k, g := range r.Groups {
			n.Groups[k] = NodeGroup{Name: g.Name, Queues: slices.Clone(g.Queues)}
			for _, q := range g.Queues {
				if served[q] {
					continue
				}
				served[q] = true
				live[q] += 0 // named, live or not
				if n.Live {
					live[q]++
				}
			}
		}
		out.Nodes[i] = n
	}
	out.Queues = make([]QueueNodes, 0, len(live))
	for q, n := range live {
		out.Queues = append(out.Queues, QueueNodes{Queue: q, LiveNodes: n})
	}
	slices.SortFunc(out.Queues, func(a, b QueueNodes) int { return strings.Compare(a.Queue, b.Queue) })
	return out
}
