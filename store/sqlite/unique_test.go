package sqlite_test

import (
	"context"
	"testing"

	"github.com/backwave/backwave/store"
)

// TestUniqueInCallersTransaction: a unique key taken inside the caller's
// transaction on the same file (the co-resident Transactional Enqueue)
// holds off the store's own inserts once it commits; a rollback frees it.
func TestUniqueInCallersTransaction(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "commit", false: "rollback"}[commit]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, app := openCoResident(t)
			nj := store.NewJob{WireName: "order.ship", Queue: "orders", MaxAttempts: 3,
				Unique: store.Unique{Key: "order:1", Scope: store.UniqueWhileLive}}
			tx, err := app.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := s.JobInsertManyTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{nj, nj}})
			if err != nil {
				t.Fatalf("JobInsertManyTx: %v", err)
			}
			if ids[0] != ids[1] {
				t.Fatalf("JobInsertManyTx = %v: the second job of the key must answer the first", ids)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.JobInsertManyResults(ctx, store.InsertManyParams{Jobs: []store.NewJob{nj}})
			if err != nil {
				t.Fatalf("JobInsertManyResults: %v", err)
			}
			switch {
			case commit && res[0] != (store.InsertResult{ID: ids[0]}):
				t.Fatalf("after the commit the key answered %+v, want job %d, not inserted", res[0], ids[0])
			case !commit && !res[0].Inserted:
				t.Fatalf("after the rollback the key answered %+v, want a new job", res[0])
			}
		})
	}
}
