package mcp

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store"
)

// nodes_list reads the node registry: a live node and an expired one, and
// a Queue with ready jobs only the expired node served flagged unserved. It
// is a View read: a caller without View is refused.
func TestNodesList(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for _, p := range []store.NodeStampParams{
		{ID: "web.1", Host: "web", PID: 10, Version: backwave.Version, Beat: time.Hour, Forget: 24 * time.Hour, Running: 1,
			Groups: []store.NodeGroup{{Name: "default", Queues: []string{backwave.DefaultQueue}}}},
		{ID: "gone.1", Beat: time.Nanosecond, Forget: 24 * time.Hour,
			Groups: []store.NodeGroup{{Name: "mailers", Queues: []string{"reports"}}}},
	} {
		if _, err := f.store.NodeStamp(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	inserter, err := backwave.NewClient(f.store, backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inserter.Enqueue(ctx, buildReport{Account: "now"}, backwave.WithQueue("reports")); err != nil {
		t.Fatal(err)
	}

	got := mustCall[nodesResult](t, connect(t, f.server(t, grant("", permission.View))), "nodes_list", nil)
	if len(got.Nodes) != 2 || got.Nodes[0].ID != "gone.1" || got.Nodes[0].Live || got.Nodes[1].ID != "web.1" || !got.Nodes[1].Live ||
		got.Nodes[1].Groups[0].Queues[0] != backwave.DefaultQueue || got.Nodes[1].BeatSeconds != 3600 || got.Nodes[1].Running != 1 {
		t.Fatalf("nodes_list nodes: %+v", got.Nodes)
	}
	for _, q := range got.Queues {
		want := queueNodesView{Queue: q.Queue, Ready: q.Ready, LiveNodes: map[string]int{backwave.DefaultQueue: 1}[q.Queue], Unserved: q.Queue == "reports"}
		if q != want {
			t.Errorf("nodes_list queue %+v, want %+v", q, want)
		}
	}

	// Offered while the caller holds View, refused at the call once it
	// no longer does.
	var view atomic.Bool
	view.Store(true)
	cs := connect(t, f.server(t, permission.Policy{Allow: func(_ context.Context, p permission.Permission) bool { return view.Load() && p == permission.View }}))
	if !slices.Contains(toolNames(t, cs), "nodes_list") {
		t.Fatal("nodes_list is not offered to a caller holding View")
	}
	view.Store(false)
	if r := call(t, cs, "nodes_list", nil); !r.isError || !strings.Contains(r.text, "permission denied") {
		t.Errorf("nodes_list without View: %+v, want permission denied", r)
	}
}
