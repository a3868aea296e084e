package main

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/sqlite"
	"github.com/backwave/backwave/workflow"
)

// The Steps of the "workflows" fixture.
type (
	wfOK struct {
		workflow.Step[string]
	}
	wfCharge struct {
		workflow.StepNoOutput
	}
)

func (wfOK) WireName() string     { return "fixture.step" }
func (wfCharge) WireName() string { return "fixture.charge_card" }

// workflowJobs runs two Workflows to their end: workflow 1, "checkout" —
// validate (job 1) → charge (2, dead-letters) and reserve (3) → ship (4) →
// email (5), the last two Cancelled by the failed charge — and workflow 2,
// "report", one Step that succeeds (job 6).
func workflowJobs(t *testing.T, s *sqlite.Store) {
	ctx := context.Background()
	h := backwave.NewHandlers()
	err := errors.Join(
		backwave.AddHandlerFunc(h, func(_ context.Context, j *backwave.Job[wfOK]) error { return workflow.SetOutput(j, "done") }),
		backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[wfCharge]) error {
			return backwave.FailPermanently(errors.New("card expired"))
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	group := backwave.DefaultWorkerGroup("fixture", backwave.Strict(backwave.DefaultQueue))
	group.PollInterval = 20 * time.Millisecond
	c, err := backwave.NewClient(s, backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{group}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b := workflow.New("checkout", workflow.None{})
	validate := workflow.Add(b, wfOK{}, workflow.Named("validate"))
	charge := workflow.Then(b, validate, wfCharge{})
	reserve := workflow.Then(b, validate, wfOK{}, workflow.Named("reserve"))
	ship := workflow.FanIn(b, wfOK{}, []workflow.Parent{charge, reserve}, workflow.Named("ship"))
	workflow.Then(b, ship, wfOK{}, workflow.Named("email"))
	if _, err := b.Enqueue(ctx, c); err != nil {
		t.Fatal(err)
	}
	r := workflow.New("report", workflow.None{})
	workflow.Add(r, wfOK{}, workflow.Named("report"))
	if _, err := r.Enqueue(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	a, err := backwave.NewAdmin(s, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	want := map[backwave.WorkflowID]backwave.WorkflowStatus{1: backwave.WorkflowFailed, 2: backwave.WorkflowSucceeded}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		done := true
		for id, st := range want {
			w, err := a.WorkflowStatus(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			done = done && w.Status == st
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("fixture workflows: not drained after 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
