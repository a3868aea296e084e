package mariadb_test

import (
	"context"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/mariadb"
)

// TestConnectionLeftInATransactionIsDiscarded: a pooled connection the
// server still holds inside a transaction — as a Galera node leaves one
// whose rollback it refused while it was not ready — fails every
// BeginTx on it ("Transaction characteristics can't be changed while a
// transaction is in progress"). The store must throw such a connection
// away and run the call on another, not fail every later call that the
// pool hands the same connection.
func TestConnectionLeftInATransactionIsDiscarded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := adminDB(t)
	defer db.Close()
	db.SetMaxOpenConns(1) // the pool's one connection is the one left in a transaction
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, schema)
	s, err := mariadb.OpenDB(ctx, db, mariadb.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	poison := func() {
		t.Helper()
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "START TRANSACTION"); err != nil {
			t.Fatal(err)
		}
		_ = c.Close() // back to the pool, still inside the transaction
	}
	poison()
	if err := s.QueuePause(ctx, store.QueueParams{Queue: "q"}); err != nil {
		t.Fatalf("a write on a pool whose connection was left in a transaction: %v", err)
	}
	poison()
	if _, err := s.QueueList(ctx); err != nil {
		// A read may fail once; the next must not meet the same connection.
		if _, err := s.QueueList(ctx); err != nil {
			t.Fatalf("a read after one on a connection left in a transaction: %v", err)
		}
	}
	qs, err := s.QueueList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paused bool
	for _, q := range qs {
		paused = paused || (q.Name == "q" && q.Paused)
	}
	if !paused {
		t.Fatalf("queue q is not paused: %+v", qs)
	}
}
