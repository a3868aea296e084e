package jobtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

// Extract, Transform and Load form a chain: each runs once its parent
// succeeded, and reads its parent's Job Output.
type (
	Extract   struct{}
	Transform struct{}
	Load      struct {
		From backwave.JobID `json:"from"` // the job whose output it loads
	}
)

func (Extract) WireName() string   { return "example.extract" }
func (Transform) WireName() string { return "example.transform" }
func (Load) WireName() string      { return "example.load" }

// A dependency chain extract → transform → load. Transform fails its first
// Attempt; load waits, Awaiting Parent, through the retry and runs last,
// reading what transform made.
func TestExampleDependencyChain(t *testing.T) {
	t.Parallel()
	handlers := backwave.NewHandlers()
	var order []string
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Extract]) error {
		order = append(order, "extract")
		return j.SetOutputJSON([]int{3, 1, 2})
	})
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Transform]) error {
		order = append(order, "transform")
		if j.Attempt == 1 {
			return errors.New("warehouse busy")
		}
		return j.SetOutputJSON([]int{1, 2, 3})
	})
	var loaded []int
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Load]) error {
		order = append(order, "load")
		rows, ok, err := backwave.AncestorOutputJSON[[]int](ctx, j, j.Args.From)
		if err != nil || !ok {
			return errors.Join(errors.New("no rows from transform"), err)
		}
		loaded = rows
		return nil
	})
	c := jobtest.New(t, backwave.Config{Handlers: handlers})

	ctx := t.Context()
	extract, err := c.Enqueue(ctx, Extract{})
	if err != nil {
		t.Fatal(err)
	}
	transform, err := c.Enqueue(ctx, Transform{}, backwave.WithParents(backwave.OnSuccess, extract))
	if err != nil {
		t.Fatal(err)
	}
	load, err := c.Enqueue(ctx, Load{From: transform}, backwave.WithParents(backwave.OnSuccess, transform))
	if err != nil {
		t.Fatal(err)
	}
	ids := []backwave.JobID{extract, transform, load}
	jobtest.RequireEnqueued(t, c, Load{From: transform})
	jobtest.RequireState(t, c, ids[2], backwave.StateAwaitingParent)

	c.RunUntilIdle()

	for _, id := range ids {
		jobtest.RequireState(t, c, id, backwave.StateSucceeded)
	}
	if got := len(order); got != 4 || order[0] != "extract" || order[3] != "load" {
		t.Fatalf("handlers ran in order %v, want extract, transform, transform, load", order)
	}
	if len(loaded) != 3 || loaded[0] != 1 {
		t.Fatalf("load read %v from transform, want [1 2 3]", loaded)
	}
	jobtest.RequireTransitions(t, c, ids[2],
		jobtest.Step{State: backwave.StateAwaitingParent, Via: backwave.ViaInsert},
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaRelease},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1},
		jobtest.Step{State: backwave.StateSucceeded, Via: backwave.ViaSucceed, Attempt: 1},
	)
}
