// Package graphtest drives a Dependency graph through a running Client for
// the Storage Adapters' end-to-end tests.
package graphtest

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Fan is a job of the fan-out/fan-in graph; Part says which.
type Fan struct {
	Part string `json:"part"` // "root", "leaf" or "sink"
}

// WireName implements backwave.JobArgs.
func (Fan) WireName() string { return "graphtest.fan" }

// Stats reports a ClientFanOutFanIn run.
type Stats struct {
	// Jobs is how many Attempts ran: one per job when nothing retried.
	Jobs int64
	// Took is the wall time from the first enqueue to the sink's success.
	Took time.Duration
}

// ClientFanOutFanIn enqueues, in one EnqueueMany call, a root job, width
// leaves depending on the root and a sink depending on every leaf, all
// on-success, and works them with a Client of one Worker Group over s until
// the sink has run and the Client stopped. It fails t unless every job
// succeeded exactly once, the sink ran after every leaf, and the sink read
// the root's Job Output through its job.
func ClientFanOutFanIn(t testing.TB, s store.Store, width int) Stats {
	t.Helper()
	ctx := context.Background()
	var ran, leaves atomic.Int64
	done := make(chan error, 1)
	var rootID backwave.JobID
	handlers := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Fan]) error {
		ran.Add(1)
		switch j.Args.Part {
		case "root":
			return j.SetOutputJSON("from the root")
		case "leaf":
			leaves.Add(1)
			return nil
		}
		got, ok, err := backwave.AncestorOutputJSON[string](ctx, j, rootID)
		switch {
		case err != nil:
			done <- err
		case !ok || got != "from the root":
			done <- fmt.Errorf("the sink read the root's output %q (present %v)", got, ok)
		case leaves.Load() != int64(width):
			done <- fmt.Errorf("the sink ran after %d of %d leaves", leaves.Load(), width)
		default:
			done <- nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g := backwave.DefaultWorkerGroup("graph", backwave.Strict(backwave.DefaultQueue))
	g.PoolSize, g.MaxClaimBatch, g.PollInterval = 64, 128, 50*time.Millisecond
	client, err := backwave.NewClient(s, backwave.Config{
		Handlers: handlers,
		Groups:   []backwave.WorkerGroupOptions{g},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	params := make([]backwave.EnqueueParams, 0, width+2)
	params = append(params, backwave.EnqueueParams{Args: Fan{Part: "root"}})
	all := make([]int, width)
	for i := range width {
		params = append(params, backwave.EnqueueParams{Args: Fan{Part: "leaf"},
			Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 0)}})
		all[i] = 1 + i
	}
	params = append(params, backwave.EnqueueParams{Args: Fan{Part: "sink"},
		Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, all...)}})
	start := time.Now()
	ids, err := client.EnqueueMany(ctx, params)
	if err != nil {
		t.Fatalf("enqueue the graph: %v", err)
	}
	rootID = ids[0]
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute):
		err = fmt.Errorf("the sink did not run in 5 minutes; %d Attempts ran", ran.Load())
	}
	took := time.Since(start)
	if stopErr := client.Stop(ctx); stopErr != nil {
		t.Errorf("stop: %v", stopErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	counts, err := s.JobCountByState(ctx, store.CountParams{})
	if err != nil {
		t.Fatal(err)
	}
	if counts[job.StateSucceeded] != width+2 || ran.Load() != int64(width+2) {
		t.Fatalf("after the drain: states %v, %d Attempts ran; want %d jobs succeeded once each", counts, ran.Load(), width+2)
	}
	return Stats{Jobs: ran.Load(), Took: took}
}
