package backwave_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// The environments of the Transactional Enqueue tests: one store and the
// application's own connections beside it, holding a business table.

// appTx is a transaction of the application's.
type appTx struct {
	tx       backwave.Tx
	exec     func(query string) error
	commit   func() error
	rollback func() error
}

// txEnv is one adapter with the application beside it.
type txEnv struct {
	name  string
	store store.Store
	// orders is the business table: (id int primary key, item text).
	orders string
	begin  func(t *testing.T) appTx
	// rows counts the business table's committed rows.
	rows func(t *testing.T) int
}

// txEnvs opens, per adapter and way of holding the application's
// transaction, a fresh environment: SQLite always, PostgreSQL when
// BACKWAVE_TEST_POSTGRES_URL is set, MariaDB when BACKWAVE_TEST_MARIADB_URL
// is set.
func txEnvs() map[string]func(t *testing.T) *txEnv {
	envs := map[string]func(t *testing.T) *txEnv{
		// One *sql.DB for the application and the store (sqlite.OpenDB).
		"sqlite/one-pool": func(t *testing.T) *txEnv {
			db := openSQLiteApp(t, filepath.Join(t.TempDir(), "app.db"))
			st, err := sqlite.OpenDB(t.Context(), db, sqlite.Options{})
			if err != nil {
				t.Fatalf("sqlite.OpenDB: %v", err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return sqlEnv(t, st, db, "orders")
		},
		// The store's own connections (sqlite.Open) beside the
		// application's *sql.DB on the same file.
		"sqlite/two-pools": func(t *testing.T) *txEnv {
			path := filepath.Join(t.TempDir(), "app.db")
			st, err := sqlite.Open(t.Context(), path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return sqlEnv(t, st, openSQLiteApp(t, path), "orders")
		},
		// A pgx pool store, the application's pgx.Tx.
		"postgres/pgx": func(t *testing.T) *txEnv {
			url, schema := pgSchema(t)
			return pgxEnv(t, url, url, schema)
		},
		// Both through a transaction pooler (pooler_env_test.go).
		"postgres/pgbouncer": func(t *testing.T) *txEnv {
			url, schema := pgSchema(t)
			storeURL, appURL := pooledURLs(t, url)
			return pgxEnv(t, storeURL, appURL, schema)
		},
		// One database/sql DB through pgx's stdlib driver for the
		// application and the store (postgres.OpenDB).
		"postgres/sql": func(t *testing.T) *txEnv {
			url, schema := pgSchema(t)
			db := openPgDB(t, url)
			st, err := postgres.OpenDB(t.Context(), db, postgres.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return sqlEnv(t, st, db, schema+".orders")
		},
		// A pgx pool store, the application's *sql.Tx through pgx's
		// stdlib driver.
		"postgres/pool+sql": func(t *testing.T) *txEnv {
			url, schema := pgSchema(t)
			st, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return sqlEnv(t, st, openPgDB(t, url), schema+".orders")
		},
	}
	for name, open := range mariaTxEnvs() {
		envs[name] = open
	}
	return envs
}

// pgxEnv is the environment of a pgx pool store on storeURL and the
// application's pgx pool on appURL, both in schema.
func pgxEnv(t *testing.T, storeURL, appURL, schema string) *txEnv {
	t.Helper()
	st, err := postgres.Open(t.Context(), storeURL, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg, err := pgxpool.ParseConfig(appURL)
	if err != nil {
		t.Fatal(err)
	}
	// What postgres.RegisterTypes asks of an application pool that, like
	// one behind a transaction pooler, prepares no statements.
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		postgres.RegisterTypes(c.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	e := &txEnv{store: st, orders: schema + ".orders"}
	if _, err := pool.Exec(t.Context(), "CREATE TABLE "+e.orders+" (id int PRIMARY KEY, item text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	e.begin = func(t *testing.T) appTx {
		ctx := t.Context()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		return appTx{
			tx:       tx,
			exec:     func(q string) error { _, err := tx.Exec(ctx, q); return err },
			commit:   func() error { return tx.Commit(ctx) },
			rollback: func() error { return tx.Rollback(ctx) },
		}
	}
	e.rows = func(t *testing.T) int {
		var n int
		if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM "+e.orders).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return e
}

// openSQLiteApp opens the application's *sql.DB on path, with the settings
// sqlite.OpenDB documents, BEGIN IMMEDIATE for its write transactions.
func openSQLiteApp(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// pgSchema returns the test database's URL and a fresh Schema Name,
// dropped at cleanup; it skips the test without
// BACKWAVE_TEST_POSTGRES_URL.
func pgSchema(t *testing.T) (url, schema string) {
	t.Helper()
	url = os.Getenv("BACKWAVE_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("BACKWAVE_TEST_POSTGRES_URL is not set: set it to a PostgreSQL URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL cases")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema = "bwtest_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, url); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			_ = conn.Close(ctx)
		}
	})
	return url, schema
}

// openPgDB opens a database/sql DB through pgx's stdlib driver.
func openPgDB(t *testing.T, url string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// sqlEnv is the environment of a store and the application's *sql.DB,
// creating the business table.
func sqlEnv(t *testing.T, st store.Store, db *sql.DB, orders string) *txEnv {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), "CREATE TABLE "+orders+" (id int PRIMARY KEY, item text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return &txEnv{
		store:  st,
		orders: orders,
		begin: func(t *testing.T) appTx {
			ctx := t.Context()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tx.Rollback() })
			return appTx{
				tx:       tx,
				exec:     func(q string) error { _, err := tx.ExecContext(ctx, q); return err },
				commit:   tx.Commit,
				rollback: tx.Rollback,
			}
		},
		rows: func(t *testing.T) int {
			var n int
			if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM "+orders).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	}
}

// insertOrder is the business write: one row of the orders table.
func (e *txEnv) insertOrder(id int) string {
	return fmt.Sprintf("INSERT INTO %s (id, item) VALUES (%d, 'book')", e.orders, id)
}

// eachTxEnv runs test in parallel on every environment.
func eachTxEnv(t *testing.T, test func(t *testing.T, e *txEnv)) {
	t.Helper()
	for name, open := range txEnvs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			e.name = name
			test(t, e)
		})
	}
}
