package mcp

import (
	"context"
	"time"
)

// The node registry read: which Clients run, what they serve, and which
// Queues with ready jobs no live node serves.

type nodeGroupView struct {
	Name   string   `json:"name" jsonschema:"the Worker Group's name"`
	Queues []string `json:"queues" jsonschema:"the Queues its Dispatch Policy serves, in its order"`
}

type nodeView struct {
	ID          string          `json:"id" jsonschema:"the node's registry id: its NodeID and a suffix fresh at each Client start"`
	Host        string          `json:"host" jsonschema:"the host name of the Client's process; empty when unknown"`
	PID         int             `json:"pid" jsonschema:"the process id"`
	Version     string          `json:"version" jsonschema:"the BackWave release the process runs"`
	Groups      []nodeGroupView `json:"groups" jsonschema:"the Client's Worker Groups; none for a Client that only enqueues"`
	Running     int             `json:"running" jsonschema:"the jobs the Client held at its last heartbeat"`
	BeatSeconds float64         `json:"beat_seconds" jsonschema:"how often the Client stamps its row"`
	StartedAt   time.Time       `json:"started_at" jsonschema:"the store's clock at the Client's first stamp"`
	HeartbeatAt time.Time       `json:"heartbeat_at" jsonschema:"the store's clock at the Client's last stamp"`
	Live        bool            `json:"live" jsonschema:"whether the last heartbeat is at most 3 beats old at now; an expired node claims nothing"`
}

type queueNodesView struct {
	Queue     string `json:"queue"`
	LiveNodes int    `json:"live_nodes" jsonschema:"the live nodes with a Worker Group serving the Queue"`
	Ready     int    `json:"ready" jsonschema:"the Queue's Scheduled jobs due now"`
	Unserved  bool   `json:"unserved" jsonschema:"the Queue has ready jobs and no live node serves it: nothing runs them until a Client serving it starts"`
}

type nodesResult struct {
	Now    time.Time        `json:"now" jsonschema:"the store's clock when the registry was read"`
	Nodes  []nodeView       `json:"nodes" jsonschema:"every registered node, by id"`
	Queues []queueNodesView `json:"queues" jsonschema:"every Queue the store knows or a node serves, by name"`
}

func addNodeReads(b *builder) {
	addRead(b, "nodes_list", "List the running nodes",
		"Every running Client (node) in the node registry with its host, pid, version, Worker Groups and Queues, running count and last heartbeat on the store's clock, live or expired; and every Queue with its live nodes and ready jobs, flagged unserved when it has ready jobs and no live node.",
		func(ctx context.Context, r reading, _ noInput) (nodesResult, error) {
			v, err := r.admin.Nodes(ctx)
			if err != nil {
				return nodesResult{}, err
			}
			bs, err := r.admin.Backlog(ctx)
			if err != nil {
				return nodesResult{}, err
			}
			ready := make(map[string]int, len(bs))
			for _, b := range bs {
				ready[b.Queue] = b.Ready
			}
			out := nodesResult{Now: v.Now, Nodes: make([]nodeView, len(v.Nodes)), Queues: make([]queueNodesView, len(v.Queues))}
			for i, n := range v.Nodes {
				gs := make([]nodeGroupView, len(n.Groups))
				for k, g := range n.Groups {
					gs[k] = nodeGroupView(g)
				}
				out.Nodes[i] = nodeView{ID: n.ID, Host: n.Host, PID: n.PID, Version: n.Version, Groups: gs, Running: n.Running,
					BeatSeconds: n.Beat.Seconds(), StartedAt: n.StartedAt, HeartbeatAt: n.HeartbeatAt, Live: n.Live}
			}
			for i, q := range v.Queues {
				out.Queues[i] = queueNodesView{Queue: q.Queue, LiveNodes: q.LiveNodes, Ready: ready[q.Queue],
					Unserved: q.LiveNodes == 0 && ready[q.Queue] > 0}
			}
			return out, nil
		})
}
