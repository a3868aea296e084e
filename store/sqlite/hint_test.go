package sqlite_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// TestHintsAfterInsert: store.HintSource — an insert of jobs due now
// announces their Queues to subscribers, once per Queue, after the commit;
// jobs due later announce nothing.
func TestHintsAfterInsert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := newStore(t, sqlite.Options{})
	var mu sync.Mutex
	var heard []string
	unsubscribe := s.SubscribeHints(func(q string) {
		// The commit is visible when the hint arrives.
		if n, err := s.JobCountByState(ctx, store.CountParams{Queue: q}); err != nil || len(n) == 0 {
			t.Errorf("hint for %q before its jobs are visible: %v, %v", q, n, err)
		}
		mu.Lock()
		heard = append(heard, q)
		mu.Unlock()
	})
	later := clock.Now().Add(time.Hour)
	_, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "w", Queue: "b", MaxAttempts: 1},
		{WireName: "w", Queue: "a", MaxAttempts: 1},
		{WireName: "w", Queue: "b", MaxAttempts: 1},
		{WireName: "w", Queue: "later", MaxAttempts: 1, ScheduledAt: later},
	}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := slices.Clone(heard)
	mu.Unlock()
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("heard %q, want [a b]", got)
	}
	unsubscribe()
	if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "c", MaxAttempts: 1}}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 2 {
		t.Fatalf("heard %q after unsubscribing", heard)
	}
}
