package backwave_test

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
)

// mariaURLEnv names the variable that points the tests at a MariaDB or
// MySQL database, e.g. mariadb://root@127.0.0.1:3306/test.
const mariaURLEnv = "BACKWAVE_TEST_MARIADB_URL"

// mariaTables returns the test database's URL and a fresh Schema Name (a
// table prefix) whose tables are dropped at cleanup; it skips the test
// without BACKWAVE_TEST_MARIADB_URL.
func mariaTables(t *testing.T) (url, schema string) {
	t.Helper()
	url = os.Getenv(mariaURLEnv)
	if url == "" {
		t.Skip(mariaURLEnv + " is not set: set it to a MariaDB URL (e.g. mariadb://root@127.0.0.1:3306/test) to run the MariaDB cases")
	}
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	schema = "bwt" + hex.EncodeToString(b) + "_"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db := openMariaApp(t, url)
		rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
			WHERE table_schema = DATABASE() AND table_name LIKE ?`, strings.ReplaceAll(schema, "_", `\_`)+"%")
		if err != nil {
			t.Errorf("drop tables %s*: %v", schema, err)
			return
		}
		var names []string
		for rows.Next() {
			var n string
			_ = rows.Scan(&n)
			names = append(names, "`"+n+"`")
		}
		_ = rows.Close()
		if len(names) > 0 {
			if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+strings.Join(names, ", ")); err != nil {
				t.Errorf("drop tables %s*: %v", schema, err)
			}
		}
	})
	return url, schema
}

// openMariaApp opens the application's own *sql.DB on the test database.
func openMariaApp(t *testing.T, url string) *sql.DB {
	t.Helper()
	cfg, err := mariadb.ParseDSN(url)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// openMariaStore opens a MariaDB store on fresh tables, closed at cleanup.
func openMariaStore(t *testing.T) store.Store {
	t.Helper()
	url, schema := mariaTables(t)
	s, err := mariadb.Open(t.Context(), url, mariadb.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// mariaTxEnvs are the MariaDB environments of the Transactional Enqueue
// tests.
func mariaTxEnvs() map[string]func(t *testing.T) *txEnv {
	return map[string]func(t *testing.T) *txEnv{
		// One *sql.DB for the application and the store (mariadb.OpenDB).
		"mariadb/one-pool": func(t *testing.T) *txEnv {
			url, schema := mariaTables(t)
			db := openMariaApp(t, url)
			st, err := mariadb.OpenDB(t.Context(), db, mariadb.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return sqlEnv(t, st, db, schema+"orders")
		},
		// The store's own pool beside the application's *sql.DB.
		"mariadb/two-pools": func(t *testing.T) *txEnv {
			url, schema := mariaTables(t)
			st, err := mariadb.Open(t.Context(), url, mariadb.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return sqlEnv(t, st, openMariaApp(t, url), schema+"orders")
		},
	}
}
