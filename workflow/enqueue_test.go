package workflow_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/postgres"
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
	// A Workflow Restart copies the payloads: the new members carry the same
	// Step names and input.
	restarted, err := admin.RestartWorkflow(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := admin.Workflow(ctx, restarted.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range rd.Members {
		if got := workflow.Label(m.Job); got != run.Steps[i].Key() || string(m.Job.Payload) != string(d.Members[i].Job.Payload) {
			t.Errorf("restarted member %d labelled %q, want %q with the same payload", i, got, run.Steps[i].Key())
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
	if err != nil || len(page.Items) != 2 {
		t.Errorf("%d Workflows after a refused one (%v), want the original and its restart", len(page.Items), err)
	}
}

// txStore is a store with a way to begin the application's transaction on
// its database.
type txStore struct {
	store backwave.Store
	// begin returns the transaction, its commit and its rollback.
	begin func(t *testing.T) (tx backwave.Tx, commit, rollback func() error)
}

// txStores are the Transactional Enqueue environments: SQLite's *sql.Tx
// always, PostgreSQL's pgx.Tx when BACKWAVE_TEST_POSTGRES_URL is set.
func txStores() map[string]func(t *testing.T) txStore {
	return map[string]func(t *testing.T) txStore{
		"sqlite": func(t *testing.T) txStore {
			db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "app.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			st, err := sqlite.OpenDB(t.Context(), db, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return txStore{store: st, begin: func(t *testing.T) (backwave.Tx, func() error, func() error) {
				tx, err := db.BeginTx(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = tx.Rollback() })
				return tx, tx.Commit, tx.Rollback
			}}
		},
		"postgres": func(t *testing.T) txStore {
			url := os.Getenv("BACKWAVE_TEST_POSTGRES_URL")
			if url == "" {
				t.Skip("BACKWAVE_TEST_POSTGRES_URL is not set: set it to a PostgreSQL URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL case")
			}
			b := make([]byte, 6)
			_, _ = rand.Read(b)
			schema := "bwtest_" + hex.EncodeToString(b)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if conn, err := pgx.Connect(ctx, url); err == nil {
					_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
					_ = conn.Close(ctx)
				}
			})
			st, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			pool, err := pgxpool.New(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			return txStore{store: st, begin: func(t *testing.T) (backwave.Tx, func() error, func() error) {
				tx, err := pool.Begin(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
				return tx, func() error { return tx.Commit(t.Context()) }, func() error { return tx.Rollback(t.Context()) }
			}}
		},
	}
}

// Transactional Enqueue: the Workflow and its members commit or roll back
// with the application's own transaction.
func TestEnqueueTx(t *testing.T) {
	t.Parallel()
	for name, open := range txStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			env := open(t)
			c, err := backwave.NewClient(env.store, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			admin, err := c.Admin("test")
			if err != nil {
				t.Fatal(err)
			}
			enqueue := func(commit bool) workflow.Enqueued {
				tx, commitTx, rollbackTx := env.begin(t)
				run, err := workflow.EnqueueTx[order](ctx, c, tx, images{widths: []int{7}}, order{ID: "tx"})
				if err != nil {
					t.Fatal(err)
				}
				end := rollbackTx
				if commit {
					end = commitTx
				}
				if err := end(); err != nil {
					t.Fatal(err)
				}
				return run
			}
			rolledBack := enqueue(false)
			committed := enqueue(true)
			if _, err := admin.WorkflowStatus(ctx, rolledBack.ID); rolledBack.ID != committed.ID && !errors.Is(err, backwave.ErrNotFound) {
				t.Errorf("a rolled-back Workflow reads %v, want ErrNotFound", err)
			}
			d, err := admin.Workflow(ctx, committed.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Members) != 3 || d.Status != backwave.WorkflowRunning || d.Members[2].Job.ID != committed.Jobs[2] {
				t.Errorf("committed Workflow: %d members, %s", len(d.Members), d.Status)
			}
			page, err := admin.Workflows(ctx, backwave.WorkflowListParams{})
			if err != nil || len(page.Items) != 1 {
				t.Errorf("%d Workflows stored (%v), want the committed one only", len(page.Items), err)
			}
		})
	}
}

// A store without Transactional Enqueue refuses the transaction.
func TestEnqueueTxUnsupported(t *testing.T) {
	t.Parallel()
	mc, err := backwave.NewClient(memstore.New(memstore.Options{}), backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.EnqueueTx[order](context.Background(), mc, struct{}{}, images{widths: []int{1}}, order{}); !errors.Is(err, backwave.ErrTxUnsupported) {
		t.Errorf("memstore EnqueueTx: %v, want ErrTxUnsupported", err)
	}
}
