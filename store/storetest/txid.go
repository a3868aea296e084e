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
