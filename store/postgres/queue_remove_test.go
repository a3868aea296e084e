package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// QueueRemove: "It is serialized against concurrent inserts into the
// Queue". An insert still open in a caller's transaction when the removal
// begins holds the removal off (the insert makes its Queue known without
// locking the queue row, so nothing per Queue would), and once the insert
// commits the removal counts its job and refuses: the job never lands in a
// Queue the store no longer knows.
func TestQueueRemoveWaitsForAnOpenInsert(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, modePgx, postgres.Options{})
	if err := s.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: "orders", Limit: 2}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := s.JobInsertManyTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "order.ship", Queue: "orders", MaxAttempts: 1}}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.QueueRemove(ctx, store.QueueParams{Queue: "orders", Actor: "ops:ada"}) }()

	// Wait, on the server's own word, until the removal waits for a lock.
	watch, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(context.Background())
	for waiting := false; !waiting; {
		select {
		case err := <-done:
			t.Fatalf("QueueRemove finished (%v) while an insert into the Queue was still open", err)
		default:
		}
		if err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'LOCK TABLE %')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if !waiting {
			time.Sleep(5 * time.Millisecond) // polling the server's view; nothing to signal on
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var ne *store.QueueNotEmptyError
	if !errors.As(err, &ne) || ne.Jobs != 1 {
		t.Fatalf("QueueRemove after the insert committed = %v, want a refusal for 1 job", err)
	}
	qs, err := s.QueueList(ctx)
	if err != nil || len(qs) != 1 || qs[0].Name != "orders" || qs[0].Limit != 2 {
		t.Fatalf("QueueList = %+v, %v; want orders kept with its limit", qs, err)
	}
}
