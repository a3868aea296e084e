package storetest

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testTxIDs holds a Transactional Enqueue to job.ID's "never reused within
// one store": an id handed out inside a transaction that rolls back belongs
// to no job, and no later insert — the store's own or another in a
// caller's transaction — is given it.
func testTxIDs(t *testing.T, s *suite) {
	s.run(t, "NoIDReusedAfterRollback", func(t *testing.T, e *env) {
		tx := e.txInserter()
		first := e.insert(newJob("q"))[0]
		var gone []job.ID
		e.rolledBack(func(x any) {
			ids, err := tx.JobInsertManyInTx(e.ctx, x, store.InsertManyParams{Jobs: []store.NewJob{newJob("q"), newJob("q")}})
			if err != nil {
				t.Fatalf("JobInsertManyInTx: %v", err)
			}
			gone = ids
		})
		for _, id := range gone {
			if _, err := e.s.JobGet(e.ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("JobGet(%d) of a job inserted in a transaction that rolled back: err = %v, want store.ErrNotFound", id, err)
			}
		}
		// The next transactional insert, rolled back too, and then the
		// store's own.
		e.rolledBack(func(x any) {
			ids, err := tx.JobInsertManyInTx(e.ctx, x, store.InsertManyParams{Jobs: []store.NewJob{newJob("q")}})
			if err != nil {
				t.Fatalf("JobInsertManyInTx: %v", err)
			}
			gone = append(gone, ids...)
		})
		later := e.insertN("q", 3)
		for _, id := range append([]job.ID{first}, gone...) {
			for _, l := range later {
				if l == id {
					t.Fatalf("id %d, handed out before (first %d, rolled back %v), was given to a later job (later %v)", id, first, gone, later)
				}
			}
		}
		// And a committed job after them is still readable by its id.
		if got := e.get(later[0]).ID; got != later[0] {
			t.Fatalf("Job(%d) answered job %d", later[0], got)
		}
	})
}

// txInserter returns the store's Transactional Enqueue, skipping the test
// when the store or the Harness has none.
func (e *env) txInserter() store.TxInserter {
	e.t.Helper()
	tx, ok := e.s.(store.TxInserter)
	if !ok || e.h.RolledBack == nil {
		e.t.Skip("storetest: the store has no Transactional Enqueue (store.TxInserter and Harness.RolledBack)")
	}
	return tx
}

// rolledBack runs fn in a transaction that is rolled back after it.
func (e *env) rolledBack(fn func(tx any)) {
	e.t.Helper()
	e.h.RolledBack(e.t, fn)
}

// RollBackIn is a Harness.RolledBack for an adapter whose Transactional
// Enqueue takes a *sql.Tx: it begins a transaction on db, runs fn in it and
// rolls it back.
func RollBackIn(t *testing.T, db *sql.DB, fn func(tx any)) {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatalf("storetest: begin a transaction to roll back: %v", err)
	}
	fn(tx)
	if err := tx.Rollback(); err != nil {
		t.Fatalf("storetest: roll back: %v", err)
	}
}

// testTxResults holds TxInserter.JobInsertManyResultsInTx to its doc: "answering
// per job, in input order, as JobInsertManyResults does … The rewrite
// commits or rolls back with tx like the insert".
func testTxResults(t *testing.T, s *suite) {
	s.run(t, "ResultsInTxSayInsertedHeldReplaced", func(t *testing.T, e *env) {
		tx := e.txInserter()
		held := e.inserted(whileLive("q", "held"))
		holder := e.inserted(replacing("q", "swap", "one"))
		var got []store.InsertResult
		e.rolledBack(func(x any) {
			var err error
			got, err = tx.JobInsertManyResultsInTx(e.ctx, x, store.InsertManyParams{Jobs: []store.NewJob{
				whileLive("q", "fresh"), whileLive("q", "held"), replacing("q", "swap", "two"),
			}})
			if err != nil {
				t.Fatalf("JobInsertManyResultsInTx: %v", err)
			}
		})
		switch {
		case len(got) != 3:
			t.Fatalf("JobInsertManyResultsInTx answered %d results for 3 jobs: %+v", len(got), got)
		case !got[0].Inserted || got[0].Replaced || got[0].ID == held || got[0].ID == holder:
			t.Fatalf("a free key's result = %+v, want a new job inserted", got[0])
		case got[1] != (store.InsertResult{ID: held}):
			t.Fatalf("a held key's result = %+v, want holder %d, not inserted", got[1], held)
		case got[2] != (store.InsertResult{ID: holder, Replaced: true}):
			t.Fatalf("a Replace of a Scheduled holder = %+v, want holder %d replaced", got[2], holder)
		}
		// The transaction rolled back: the rewrite with it.
		if j := e.get(holder); string(j.Payload) != "one" {
			t.Fatalf("holder's payload = %q after the caller's transaction rolled back, want the one it had", j.Payload)
		}
		if audit := e.rewrites(holder); len(audit) != 0 {
			t.Fatalf("audit trail %+v of a rewrite whose transaction rolled back, want none", audit)
		}
		if _, err := e.s.JobGet(e.ctx, got[0].ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("JobGet(%d) of a job inserted in a transaction that rolled back: err = %v, want store.ErrNotFound", got[0].ID, err)
		}
	})
}
