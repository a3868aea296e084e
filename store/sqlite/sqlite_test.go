package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
	"github.com/backwave/backwave/store/storetest"
	"github.com/backwave/backwave/vtime"
)

// newStore opens a Store on a fresh file in t's temp dir, on a Manual clock
// the test moves, and closes it at cleanup.
func newStore(t *testing.T, opts sqlite.Options) (*sqlite.Store, *vtime.Manual) {
	t.Helper()
	clock := vtime.NewManual(vtime.Epoch)
	if opts.Clock == nil {
		opts.Clock = clock
	}
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "jobs.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	t.Cleanup(func() { checkCounts(t, s) }) // before the Close above
	return s, clock
}

// checkCounts fails t unless the Monitor's counts in s's file agree with a
// count of its jobs: whatever path the test took through the store, every
// insert, state change and delete of a job was counted.
func checkCounts(t *testing.T, s *sqlite.Store) {
	t.Helper()
	drift, err := sqlite.CountsDrift(context.Background(), s)
	switch {
	case errors.Is(err, store.ErrClosed): // the test closed it; nothing to read
	case err != nil:
		t.Errorf("check the Monitor's counts: %v", err)
	case drift != "":
		t.Errorf("the Monitor's counts drifted from the job table: %s", drift)
	}
}

// harness opens a Store with opts for the Conformance Suite; WithHistory
// opens another one on the same clock.
func harness(t *testing.T, opts sqlite.Options) storetest.Harness {
	s, clock := newStore(t, opts)
	return storetest.Harness{
		Store:   s,
		Now:     clock.Now,
		Advance: func(d time.Duration) { clock.Advance(d) },
		WithHistory: func(p store.HistoryPolicy) store.Store {
			o := opts
			o.Clock, o.History = clock, p
			other, _ := newStore(t, o)
			return other
		},
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	newHarness := func(t *testing.T) storetest.Harness {
		h := harness(t, sqlite.Options{})
		h.Peer = peerOf(h.Store.(*sqlite.Store))
		h.RolledBack = rolledBackOn(h.Store.(*sqlite.Store))
		return h
	}
	storetest.Run(t, newHarness)
}

// rolledBackOn runs fn in a transaction the application begins on s's file
// (BEGIN IMMEDIATE, as the Transactional Enqueue asks) and rolls it back.
func rolledBackOn(s *sqlite.Store) func(t *testing.T, fn func(tx any)) {
	return func(t *testing.T, fn func(tx any)) {
		t.Helper()
		app, err := sql.Open("sqlite", s.Path()+"?_txlock=immediate&_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		storetest.RollBackIn(t, app, fn)
	}
}

// peerOf opens a second Store on s's file and clock, as a second node would.
func peerOf(s *sqlite.Store) func(t *testing.T) store.Store {
	return func(t *testing.T) store.Store {
		p, err := sqlite.Open(t.Context(), s.Path(), sqlite.Options{Schema: s.Schema(), Clock: s.Clock()})
		if err != nil {
			t.Fatalf("open a peer on %s: %v", s.Path(), err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
}

// TestConformanceSchemaName runs the suite again under a Schema Name other
// than the default, so every statement goes through the rename. Under the
// race detector (where the engine is slow) TestSchemaNameLifecycle covers
// the renamed statements instead.
func TestConformanceSchemaName(t *testing.T) {
	t.Parallel()
	if testing.Short() || raceEnabled {
		t.Skip("the default Schema Name run covers the contract; TestSchemaNameLifecycle the rename")
	}
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return harness(t, sqlite.Options{Schema: "app_jobs_"})
	})
}
