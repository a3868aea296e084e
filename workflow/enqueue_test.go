package workflow_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/sqlite"
	"github.com/backwave/backwave/workflow"
)

// Enqueue stores the prepared graph as one Workflow: its name, one member
// per Step in Step order, each with the edges the builder gave it.
func TestEnqueueStoresTheGraph(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := memstore.New(memstore.Options{})
	c, err := backwave.NewClient(st, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	run, err := workflow.Enqueue[order](ctx, c, images{widths: []int{1, 2}}, order{ID: "z"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := c.Admin("test")
	if err != nil {
		t.Fatal(err)
	}
	d, err := admin.Workflow(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "images" || len(d.Members) != 4 || len(run.Jobs) != 4 {
		t.Fatalf("workflow %q with %d members, %d ids", d.Name, len(d.Members), len(run.Jobs))
	}
	for i, m := range d.Members {
		if m.Job.ID != run.Jobs[i] {
			t.Errorf("member %d is job %d, Enqueue said %d", i, m.Job.ID, run.Jobs[i])
		}
		var want []backwave.JobID
		for _, p := range run.Steps[i].Parents {
			want = append(want, run.Jobs[p])
		}
		if !slices.Equal(m.Parents, want) {
			t.Errorf("member %d (%s) after %v, want %v", i, workflow.Label(m.Job), m.Parents, want)
		}
		if got := workflow.Label(m.Job); got != run.Steps[i].Key() {
			t.Errorf("member %d labelled %q, want %q", i, got, run.Steps[i].Key())
		}
	}
	if id, ok := run.Job(workflow.Ref[fetch]{}); ok || id != 0 {
		t.Errorf("the zero Ref names job %d", id)
	}
	// A bad graph stores nothing.
	b := workflow.New("bad", order{})
	workflow.Add(b, fetch{})
	workflow.Add(b, fetch{})
	if _, err := b.Enqueue(ctx, c); !errors.Is(err, workflow.ErrInvalidWorkflow) {
		t.Fatalf("bad graph: %v", err)
	}
	page, err := admin.Workflows(ctx, backwave.WorkflowListParams{})
	if err != nil || len(page.Items) != 1 {
		t.Errorf("%d Workflows after a refused one (%v), want 1", len(page.Items), err)
	}
}

// Transactional Enqueue: the Workflow and its members commit or roll back
// with the application's own transaction.
func TestEnqueueTx(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "app.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	st, err := sqlite.OpenDB(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c, err := backwave.NewClient(st, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := c.Admin("test")
	if err != nil {
		t.Fatal(err)
	}
	enqueue := func(commit bool) workflow.Enqueued {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		run, err := workflow.EnqueueTx[order](ctx, c, tx, images{widths: []int{7}}, order{ID: "tx"})
		if err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		return run
	}
	rolledBack := enqueue(false)
	if _, err := admin.WorkflowStatus(ctx, rolledBack.ID); !errors.Is(err, backwave.ErrNotFound) {
		t.Errorf("a rolled-back Workflow reads %v, want ErrNotFound", err)
	}
	committed := enqueue(true)
	d, err := admin.Workflow(ctx, committed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Members) != 3 || d.Status != backwave.WorkflowRunning {
		t.Errorf("committed Workflow: %d members, %s", len(d.Members), d.Status)
	}
	// A store without Transactional Enqueue refuses the transaction.
	mc, err := backwave.NewClient(memstore.New(memstore.Options{}), backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.EnqueueTx[order](context.Background(), mc, struct{}{}, images{widths: []int{1}}, order{}); !errors.Is(err, backwave.ErrTxUnsupported) {
		t.Errorf("memstore EnqueueTx: %v, want ErrTxUnsupported", err)
	}
}
