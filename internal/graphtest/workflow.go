package graphtest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backwave/backwave"
)

// Step is a member of the diamond-heavy Workflow; N is its batch index.
type Step struct {
	N int `json:"n"`
}

// WireName implements backwave.JobArgs.
func (Step) WireName() string { return "graphtest.step" }

// DiamondParents returns the parents, by batch index, of a diamond-heavy
// graph of n ≥ 1 steps: a root, then diamonds in a row — each a fork of
// four branches on the previous join and a join on the four — and a tail of
// branches on the last join to make n.
func DiamondParents(n int) [][]int {
	parents := make([][]int, 1, n)
	join := 0
	for len(parents)+5 <= n {
		first := len(parents)
		for range 4 {
			parents = append(parents, []int{join})
		}
		parents = append(parents, []int{first, first + 1, first + 2, first + 3})
		join = len(parents) - 1
	}
	for len(parents) < n {
		parents = append(parents, []int{join})
	}
	return parents
}

// ClientDiamondWorkflow enqueues a diamond-heavy Workflow of n steps with
// Client.EnqueueWorkflow (on-success edges, DiamondParents) and works it
// with a running Client over s until every step ran. It fails t unless
// every step ran exactly once, after all of its parents Succeeded (each
// handler reads its parents' states through its job), and the Workflow's
// derived status is Succeeded with n members.
func ClientDiamondWorkflow(t testing.TB, s backwave.Store, n int) Stats {
	t.Helper()
	ctx := context.Background()
	parents := DiamondParents(n)
	var ran atomic.Int64
	var mu sync.Mutex
	var ids []backwave.JobID
	var bad error
	done := make(chan struct{})
	handlers := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Step]) error {
		mu.Lock()
		mine := ids
		mu.Unlock()
		for _, p := range parents[j.Args.N] {
			out, err := j.AncestorOutput(ctx, mine[p])
			if err != nil || out.State != backwave.StateSucceeded {
				mu.Lock()
				bad = fmt.Errorf("step %d ran with parent %d %s (%v)", j.Args.N, p, out.State, err)
				mu.Unlock()
			}
		}
		if ran.Add(1) == int64(n) {
			close(done)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g := backwave.DefaultWorkerGroup("diamond", backwave.Strict(backwave.DefaultQueue))
	g.PoolSize, g.MaxClaimBatch, g.PollInterval = 32, 64, 50*time.Millisecond
	client, err := backwave.NewClient(s, backwave.Config{Handlers: handlers, Groups: []backwave.WorkerGroupOptions{g},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	params := make([]backwave.EnqueueParams, n)
	for i, ps := range parents {
		params[i] = backwave.EnqueueParams{Args: Step{N: i}}
		if len(ps) > 0 {
			params[i].Options = []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, ps...)}
		}
	}
	start := time.Now()
	wf, got, err := client.EnqueueWorkflow(ctx, backwave.NewWorkflow{Name: "diamonds"}, params)
	if err != nil {
		t.Fatalf("enqueue the workflow: %v", err)
	}
	mu.Lock()
	ids = got
	mu.Unlock()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		err = fmt.Errorf("only %d of %d steps ran in 5 minutes", ran.Load(), n)
	}
	took := time.Since(start)
	if stopErr := client.Stop(ctx); stopErr != nil {
		t.Errorf("stop: %v", stopErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if bad != nil {
		t.Fatal(bad)
	}
	admin, err := backwave.NewAdmin(s, "graphtest")
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.WorkflowStatus(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	if w.Status != backwave.WorkflowSucceeded || w.Members != n || w.Counts[backwave.StateSucceeded] != n || ran.Load() != int64(n) {
		t.Fatalf("after the run: %+v, %d Attempts ran; want %d members Succeeded once each", w, ran.Load(), n)
	}
	return Stats{Jobs: ran.Load(), Took: took}
}
