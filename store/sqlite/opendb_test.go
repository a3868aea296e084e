package sqlite_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
	"github.com/backwave/backwave/store/storetest"
	"github.com/backwave/backwave/vtime"
)

// appDSN is the connection settings OpenDB needs, with BEGIN DEFERRED (no
// _txlock): the store's own write transactions take the write lock
// themselves.
const appDSN = "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)"

// openApp opens an application's *sql.DB on path with dsn's settings.
func openApp(t *testing.T, path, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// openOnDB opens a Store with OpenDB on a fresh application's DB (appDSN)
// on a Manual clock, or on a DB of path when path is set.
func openOnDB(t *testing.T, path string, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "app.db")
	}
	s, err := sqlite.OpenDB(t.Context(), openApp(t, path, appDSN), opts)
	if err != nil {
		t.Fatalf("OpenDB: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	t.Cleanup(func() { checkCounts(t, s) })
	return s
}

// TestConformanceOpenDB runs the Conformance Suite on a Store opened with
// OpenDB on an application's pool whose transactions begin DEFERRED, its
// Peer another such Store on a pool of its own, as a second process would
// be. Under the race detector (where the engine is slow) the default run
// covers the contract and TestOpenDBConcurrentWriters the writes on a
// shared pool.
func TestConformanceOpenDB(t *testing.T) {
	t.Parallel()
	if testing.Short() || raceEnabled {
		t.Skip("TestConformance covers the contract; TestOpenDBConcurrentWriters the writes on a shared pool")
	}
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := vtime.NewManual(vtime.Epoch)
		s := openOnDB(t, "", sqlite.Options{Clock: clock})
		return storetest.Harness{
			Store:   s,
			Now:     clock.Now,
			Advance: func(d time.Duration) { clock.Advance(d) },
			WithHistory: func(p store.HistoryPolicy) store.Store {
				return openOnDB(t, "", sqlite.Options{Clock: clock, History: p})
			},
			Peer: func(t *testing.T) store.Store {
				return openOnDB(t, s.Path(), sqlite.Options{Clock: clock})
			},
		}
	})
}

// TestOpenDBConcurrentWriters: stores on pools that begin DEFERRED — two
// stores, as two processes, and the application's own writes — insert and
// claim at once without SQLITE_BUSY: each store write transaction takes the
// file's write lock before it reads.
func TestOpenDBConcurrentWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "app.db")
	a := openOnDB(t, path, sqlite.Options{})
	b := openOnDB(t, path, sqlite.Options{})
	app := openApp(t, path, appDSN)
	if _, err := app.ExecContext(t.Context(), `CREATE TABLE hits (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	const rounds = 40
	var wg sync.WaitGroup
	errs := make(chan error, 8*rounds)
	for w, s := range []*sqlite.Store{a, b, a, b} {
		wg.Go(func() {
			for range rounds {
				if _, err := s.JobInsertMany(t.Context(), store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}}); err != nil {
					errs <- err
				}
				if _, err := s.JobClaim(t.Context(), store.ClaimParams{Worker: job.WorkerID("w" + strconv.Itoa(w)), Queues: []string{"q"}, Limit: 2, LeaseDuration: time.Minute}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Go(func() {
		for range rounds {
			if _, err := app.ExecContext(t.Context(), `INSERT INTO hits (n) SELECT COUNT(*) FROM hits`); err != nil {
				errs <- err
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	counts, err := a.JobCountByState(t.Context(), store.CountParams{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != 4*rounds {
		t.Fatalf("%d jobs, want %d", total, 4*rounds)
	}
}

// TestOpenDBSharesTheApplicationsFile: BackWave's tables go into the
// application's file beside its own, Path names the file, and Close leaves
// the application's DB open.
func TestOpenDBSharesTheApplicationsFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "app.db")
	db := openApp(t, path, appDSN)
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.OpenDB(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != sqlite.LatestSchemaVersion() {
		t.Errorf("SchemaVersion() = %d, %v; want %d", v, err, sqlite.LatestSchemaVersion())
	}
	if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM orders`).Scan(&n); err != nil {
		t.Fatalf("the application's DB after Close: %v", err)
	}
	if _, err := s.JobGet(ctx, 1); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("JobGet after Close: %v, want store.ErrClosed", err)
	}
	// A DB on a file migrated elsewhere opens with ManualMigrate.
	again, err := sqlite.OpenDB(ctx, db, sqlite.Options{ManualMigrate: true})
	if err != nil {
		t.Fatalf("OpenDB(ManualMigrate) on a migrated file: %v", err)
	}
	_ = again.Close()
	fresh := openApp(t, filepath.Join(t.TempDir(), "fresh.db"), appDSN)
	if _, err := sqlite.OpenDB(ctx, fresh, sqlite.Options{ManualMigrate: true}); !errors.Is(err, sqlite.ErrSchemaBehind) {
		t.Fatalf("OpenDB(ManualMigrate) on a fresh file: %v, want ErrSchemaBehind", err)
	}
}

// otherDriver is a database/sql driver that is not SQLite's.
type otherDriver struct{}

func (otherDriver) Open(string) (driver.Conn, error) { return nil, errors.New("not a database") }

func init() { sql.Register("backwave-test-other", otherDriver{}) }

// TestOpenDBRefuses: OpenDB refuses a DB it cannot run on, wrapping
// store.ErrInvalidParams and naming what is missing and how to set it.
func TestOpenDBRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	other, err := sql.Open("backwave-test-other", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	file := func(name, dsn string) *sql.DB { return openApp(t, filepath.Join(dir, name), dsn) }
	cases := []struct {
		name string
		db   *sql.DB
		opts sqlite.Options
		want []string // in the message
	}{
		{"nil", nil, sqlite.Options{}, []string{"nil *sql.DB"}},
		{"another driver", other, sqlite.Options{}, []string{"modernc.org/sqlite"}},
		{"in memory", openApp(t, ":memory:", ""), sqlite.Options{}, []string{"in-memory"}},
		{"no settings", file("plain.db", "?_pragma=busy_timeout(0)"), sqlite.Options{}, []string{"journal_mode(WAL)", "busy_timeout(10000)"}},
		{"rollback journal", file("delete.db", "?_pragma=journal_mode(DELETE)&_pragma=busy_timeout(5000)"), sqlite.Options{}, []string{"journal_mode is delete"}},
		{"synchronous off", file("off.db", appDSN+"&_pragma=synchronous(OFF)"), sqlite.Options{}, []string{"synchronous is OFF"}},
		{"query only", file("ro.db", appDSN+"&_pragma=query_only(1)"), sqlite.Options{}, []string{"query_only"}},
		{"store's pool knobs", file("knobs.db", appDSN), sqlite.Options{BusyTimeout: time.Second, Synchronous: sqlite.SynchronousFull, ReadConns: 2},
			[]string{"BusyTimeout", "Synchronous", "ReadConns"}},
		{"bad schema", file("schema.db", appDSN), sqlite.Options{Schema: "1bad"}, []string{"schema name"}},
	}
	for _, tc := range cases {
		s, err := sqlite.OpenDB(t.Context(), tc.db, tc.opts)
		if err == nil {
			_ = s.Close()
			t.Errorf("%s: OpenDB accepted it", tc.name)
			continue
		}
		if !errors.Is(err, store.ErrInvalidParams) {
			t.Errorf("%s: %v; want store.ErrInvalidParams", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", tc.name, err, w)
			}
		}
	}
}

// TestOpenDBTransactionalEnqueue: on one pool, the application's
// transaction — DEFERRED, its first statement a write — carries the
// business row and the job together.
func TestOpenDBTransactionalEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	db := openApp(t, path, appDSN)
	s, err := sqlite.OpenDB(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders DEFAULT VALUES`); err != nil {
			t.Fatal(err)
		}
		ids, err := s.JobInsertManyInTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}})
		if err != nil {
			t.Fatalf("JobInsertManyInTx: %v", err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.JobGet(ctx, ids[0])
		if commit != (err == nil) || !commit && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("JobGet after commit=%v: %v", commit, err)
		}
	}
}
