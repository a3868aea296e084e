package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
)

func nodesCommand() *cli.Command {
	return &cli.Command{
		Name:      "nodes",
		Usage:     "list the running Clients (nodes) and the Queues each serves",
		UsageText: "backwave nodes list --db URI [--json]",
		Commands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list every registered node, live or expired on the store's clock, and warn of Queues with ready jobs no live node serves",
				Description: "Each running Client stamps its row on its beat (Config.NodeHeartbeat) and removes it at Stop. A node\n" +
					"is live while its last heartbeat is at most 3 of its beats old on the store's clock, expired after;\n" +
					"an expired row is forgotten 24 hours after its last heartbeat.",
				UsageText: "backwave nodes list --db URI [--json]",
				Flags:     []cli.Flag{dbFlag(), jsonFlag()},
				Action:    nodesList,
			},
		},
	}
}

func nodesList(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	v, err := a.Nodes(ctx)
	if err != nil {
		return err
	}
	backlog, err := backlogByQueue(ctx, a)
	if err != nil {
		return err
	}
	var unserved []backwave.QueueNodes
	for _, q := range v.Queues {
		if q.LiveNodes == 0 && backlog[q.Queue].Ready > 0 {
			unserved = append(unserved, q)
		}
	}
	if cmd.Bool("json") {
		return writeJSON(cmd.Root().Writer, nodesJSON(v, backlog))
	}
	err = printTable(cmd.Root().Writer, "(no nodes: no Client is running against this store)",
		"NODE\tHOST\tPID\tVERSION\tGROUPS\tRUNNING\tSTARTED\tLAST HEARTBEAT\tSTATUS", v.Nodes, func(n backwave.NodeInfo) string {
			status := "live"
			if !n.Live {
				status = "expired"
			}
			host := n.Host
			if host == "" {
				host = "-"
			}
			return strings.Join([]string{n.ID, host, strconv.Itoa(n.PID), n.Version, groupsText(n.Groups), strconv.Itoa(n.Running),
				stamp(n.StartedAt), stamp(n.HeartbeatAt) + " (" + agoText(v.Now.Sub(n.HeartbeatAt)) + ")", status}, "\t")
		})
	if err != nil {
		return err
	}
	for _, q := range unserved {
		fmt.Fprintf(cmd.Root().ErrWriter, "backwave: warning: Queue %q has %s and no live node serves it: nothing runs them until a Client serving it starts\n",
			q.Queue, plural(backlog[q.Queue].Ready, "ready job"))
	}
	return nil
}

// groupsText renders a node's Worker Groups as "group:queue,queue group:…",
// "-" for none.
func groupsText(gs []backwave.NodeGroup) string {
	if len(gs) == 0 {
		return "-"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.Name + ":" + strings.Join(g.Queues, ",")
	}
	return strings.Join(parts, " ")
}

// agoText renders a heartbeat's age to the second.
func agoText(d time.Duration) string {
	return max(0, d).Truncate(time.Second).String() + " ago"
}

// nodeJSON is one node of nodes list --json.
type nodeJSON struct {
	ID          string          `json:"id"`
	Host        string          `json:"host"`
	PID         int             `json:"pid"`
	Version     string          `json:"version"`
	Groups      []nodeGroupJSON `json:"groups"`
	Running     int             `json:"running"`
	BeatSeconds float64         `json:"beat_seconds"`
	StartedAt   string          `json:"started_at"`
	HeartbeatAt string          `json:"heartbeat_at"`
	Live        bool            `json:"live"`
}

// nodeGroupJSON is one Worker Group of a node.
type nodeGroupJSON struct {
	Name   string   `json:"name"`
	Queues []string `json:"queues"`
}

// queueNodesJSON is one Queue's live nodes and ready jobs.
type queueNodesJSON struct {
	Queue     string `json:"queue"`
	LiveNodes int    `json:"live_nodes"`
	Ready     int    `json:"ready"`
}

// nodesJSON is nodes list --json: the store's now, the nodes, and every
// Queue with its live nodes.
func nodesJSON(v backwave.NodesView, backlog map[string]backwave.QueueBacklog) any {
	out := struct {
		Now    string           `json:"now"`
		Nodes  []nodeJSON       `json:"nodes"`
		Queues []queueNodesJSON `json:"queues"`
	}{Now: stampJSON(v.Now), Nodes: []nodeJSON{}, Queues: []queueNodesJSON{}}
	for _, n := range v.Nodes {
		j := nodeJSON{ID: n.ID, Host: n.Host, PID: n.PID, Version: n.Version, Groups: []nodeGroupJSON{}, Running: n.Running,
			BeatSeconds: n.Beat.Seconds(), StartedAt: stampJSON(n.StartedAt), HeartbeatAt: stampJSON(n.HeartbeatAt), Live: n.Live}
		for _, g := range n.Groups {
			j.Groups = append(j.Groups, nodeGroupJSON{Name: g.Name, Queues: g.Queues})
		}
		out.Nodes = append(out.Nodes, j)
	}
	for _, q := range v.Queues {
		out.Queues = append(out.Queues, queueNodesJSON{Queue: q.Queue, LiveNodes: q.LiveNodes, Ready: backlog[q.Queue].Ready})
	}
	return out
}
