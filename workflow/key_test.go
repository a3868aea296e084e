package workflow_test

import (
	"log/slog"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/workflow"
)

// A Step's Concurrency Key (With(backwave.WithConcurrencyKey)) lands on its
// member job, and a Workflow Restart keeps it.
func TestStepConcurrencyKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c, err := backwave.NewClient(memstore.New(memstore.Options{}), backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b := workflow.New("keyed", order{ID: "k"})
	workflow.Add(b, fetch{}, workflow.With(backwave.WithConcurrencyKey("acme")))
	workflow.Add(b, fetch{}, workflow.Named("plain"))
	run, err := b.Enqueue(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := c.Admin("test")
	if err != nil {
		t.Fatal(err)
	}
	restarted, err := admin.RestartWorkflow(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []backwave.WorkflowID{run.ID, restarted.ID} {
		d, err := admin.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Members) != 2 || d.Members[0].Job.ConcurrencyKey != "acme" || d.Members[1].Job.ConcurrencyKey != "" {
			t.Fatalf("workflow %d members' keys: %+v", id, d.Members)
		}
	}
	bad := workflow.New("bad-key", order{})
	workflow.Add(bad, fetch{}, workflow.With(backwave.WithConcurrencyKey("")))
	if _, err := bad.Enqueue(ctx, c); err == nil {
		t.Fatal("a Step with an empty Concurrency Key was enqueued")
	}
}
