package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// The walk's horizon (observer.go): a transaction still holding an
// uncommitted Transition Log entry drew its seq before a later one that
// commits first; the walk must not let its cursor pass the held entry, and
// delivers it once its transaction commits.
func TestObserverHorizonHoldsUncommitted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, modePgx, postgres.Options{})
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
	held, err := s.JobInsertManyTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "held", Queue: "q", MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	later, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "later", Queue: "q2", MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	p := store.ObserverClaimParams{Observer: "horizon", Holder: "n1", LeaseDuration: time.Minute, States: []job.State{job.StateScheduled}, Limit: 100}
	var delivered []job.ID
	walk := func() {
		t.Helper()
		res, err := s.ObserverClaim(ctx, p)
		if err != nil || !res.Held {
			t.Fatalf("claim: %+v %v", res, err)
		}
		for _, o := range res.Transitions {
			delivered = append(delivered, o.Job)
		}
		if err := s.ObserverAdvance(ctx, store.ObserverAdvanceParams{Observer: p.Observer, Holder: p.Holder, Token: res.Token, To: res.Through, LeaseDuration: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	// While the held transaction runs, the later entry, committed, waits
	// behind it: delivering it would move the cursor past the held one.
	for range 5 {
		walk()
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range delivered {
		if id == later[0] {
			t.Fatalf("the walk delivered job %d's entry past job %d's uncommitted one", later[0], held[0])
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(delivered) < 2 && time.Now().Before(deadline) {
		walk()
		time.Sleep(10 * time.Millisecond)
	}
	if len(delivered) != 2 || delivered[0] != held[0] || delivered[1] != later[0] {
		t.Fatalf("delivered %v, want the held job %d then the later %d", delivered, held[0], later[0])
	}
}
