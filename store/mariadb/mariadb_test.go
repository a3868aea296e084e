package mariadb_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/mariadb"
	"github.com/backwave/backwave/store/storetest"
	"github.com/backwave/backwave/vtime"
)

// urlEnv names the variable that points the tests at a MariaDB or MySQL
// database, e.g. mariadb://root@127.0.0.1:3306/test.
const urlEnv = "BACKWAVE_TEST_MARIADB_URL"

// testURL returns the test database's URL or skips the test.
func testURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(urlEnv)
	if u == "" {
		t.Skipf("%s is not set: set it to a MariaDB or MySQL URL (e.g. mariadb://root@127.0.0.1:3306/test) to run the MariaDB adapter's tests", urlEnv)
	}
	return u
}

// randomSchema returns a fresh Schema Name (table prefix) for one test.
func randomSchema(t testing.TB) string {
	t.Helper()
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "bwt" + hex.EncodeToString(b) + "_"
}

// adminDB opens a plain pool on the test database.
func adminDB(t testing.TB) *sql.DB {
	t.Helper()
	cfg, err := mariadb.ParseDSN(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// dropSchemaAtCleanup drops every table whose name starts with schema
// when t ends.
func dropSchemaAtCleanup(t testing.TB, schema string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db := adminDB(t)
		defer func() { _ = db.Close() }()
		rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
			WHERE table_schema = DATABASE() AND table_name LIKE ?`, strings.ReplaceAll(schema, "_", `\_`)+"%")
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		var names []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
			}
			names = append(names, "`"+n+"`")
		}
		_ = rows.Close()
		if len(names) == 0 {
			return
		}
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+strings.Join(names, ", ")); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
}

// openStore opens a Store on a fresh table prefix (unless opts names one),
// dropped with the store at cleanup.
func openStore(t testing.TB, opts mariadb.Options) *mariadb.Store {
	t.Helper()
	url := testURL(t)
	if opts.Schema == "" {
		opts.Schema = randomSchema(t)
		dropSchemaAtCleanup(t, opts.Schema)
	}
	s, err := mariadb.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// harness opens a Store for the Conformance Suite on a pinned clock;
// WithHistory and Peer open more on the same clock.
func harness(t *testing.T) storetest.Harness {
	clock := vtime.NewManual(vtime.Epoch)
	s := openStore(t, mariadb.Options{Now: clock.Now})
	return storetest.Harness{
		Store:   s,
		Now:     clock.Now,
		Advance: func(d time.Duration) { clock.Advance(d) },
		WithHistory: func(p store.HistoryPolicy) store.Store {
			return openStore(t, mariadb.Options{Now: clock.Now, History: p})
		},
		Peer: func(t *testing.T) store.Store {
			return openStore(t, mariadb.Options{Now: clock.Now, Schema: s.Schema()})
		},
		RolledBack: func(t *testing.T, fn func(tx any)) {
			db := adminDB(t)
			defer func() { _ = db.Close() }()
			storetest.RollBackIn(t, db, fn)
		},
	}
}

func TestConformance(t *testing.T) {
	testURL(t)
	t.Parallel()
	storetest.Run(t, harness)
}

// TestDifferential replays the Conformance Suite's random call sequences on
// this adapter, its calls moving between two Stores on the same tables,
// and on the In-Memory Store, and requires the same answers and final
// state (storetest.RunDifferential).
func TestDifferential(t *testing.T) {
	testURL(t)
	t.Parallel()
	storetest.RunDifferential(t, harness, storetest.DifferentialOptions{Quick: raceEnabled})
}
