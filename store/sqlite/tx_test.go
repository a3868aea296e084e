package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// openCoResident opens a Store and, on the same file, the application's own
// *sql.DB holding a business table: the co-resident deployment of the
// Embedded Adapter.
func openCoResident(t *testing.T) (*sqlite.Store, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	app, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	if _, err := app.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return s, app
}

// placeOrder writes a business row and enqueues its job in one transaction
// the application owns, then commits or rolls back.
func placeOrder(t *testing.T, s *sqlite.Store, app *sql.DB, commit bool) job.ID {
	t.Helper()
	ctx := context.Background()
	tx, err := app.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (item) VALUES ('book')`); err != nil {
		t.Fatal(err)
	}
	ids, err := s.JobInsertManyTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "order.ship", Queue: "orders", Payload: []byte(`{"item":"book"}`), MaxAttempts: 3, Tags: []job.Tag{job.Label("new")}},
	}})
	if err != nil {
		t.Fatalf("JobInsertManyTx: %v", err)
	}
	if commit {
		err = tx.Commit()
	} else {
		err = tx.Rollback()
	}
	if err != nil {
		t.Fatal(err)
	}
	return ids[0]
}

func countOrders(t *testing.T, app *sql.DB) int {
	t.Helper()
	var n int
	if err := app.QueryRow(`SELECT COUNT(*) FROM orders`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTransactionalEnqueueCommit: glossary, Transactional Enqueue — the
// business write and the job commit together; the job is then visible and
// claimable.
func TestTransactionalEnqueueCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, app := openCoResident(t)
	id := placeOrder(t, s, app, true)
	if n := countOrders(t, app); n != 1 {
		t.Fatalf("%d orders after commit, want 1", n)
	}
	j, err := s.JobGet(ctx, id)
	if err != nil {
		t.Fatalf("JobGet after commit: %v", err)
	}
	if j.State != job.StateScheduled || string(j.Payload) != `{"item":"book"}` || len(j.Tags) != 1 {
		t.Fatalf("job after commit = %+v", j)
	}
	got, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"orders"}, Limit: 10, LeaseDuration: 60e9})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != id || got[0].Attempt != 1 {
		t.Fatalf("claimed %+v, want job %d at Attempt 1", got, id)
	}
}

// TestTransactionalEnqueueRollback: the business write and the job roll
// back together; the job is gone.
func TestTransactionalEnqueueRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, app := openCoResident(t)
	id := placeOrder(t, s, app, false)
	if n := countOrders(t, app); n != 0 {
		t.Fatalf("%d orders after rollback, want 0", n)
	}
	if _, err := s.JobGet(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("JobGet after rollback: %v, want ErrNotFound", err)
	}
	got, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"orders"}, Limit: 10, LeaseDuration: 60e9})
	if err != nil || len(got) != 0 {
		t.Fatalf("claim after rollback = %v, %v; want nothing", got, err)
	}
	// The next job after a rollback is claimable as usual.
	id2 := placeOrder(t, s, app, true)
	if j, err := s.JobGet(ctx, id2); err != nil || j.State != job.StateScheduled {
		t.Fatalf("JobGet(%d) = %+v, %v", id2, j, err)
	}
}

// TestTransactionalEnqueueInvalid: invalid params fail before touching the
// caller's transaction, which stays usable.
func TestTransactionalEnqueueInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, app := openCoResident(t)
	tx, err := app.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	_, err = s.JobInsertManyTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "", Queue: "q", MaxAttempts: 1}}})
	if !errors.Is(err, store.ErrInvalidParams) {
		t.Fatalf("JobInsertManyTx(no wire name) = %v, want ErrInvalidParams", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (item) VALUES ('pen')`); err != nil {
		t.Fatalf("the caller's transaction is broken: %v", err)
	}
	if _, err := s.JobInsertManyTx(ctx, nil, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}}); !errors.Is(err, store.ErrTxUnsupported) {
		t.Fatalf("JobInsertManyTx(nil tx) = %v, want ErrTxUnsupported", err)
	}
}
