package encrypt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// backend is one adapter under test: a fresh raw store, and the database's
// own view of its user-data columns.
type backend struct {
	name string
	open func(t *testing.T) opened
}

type opened struct {
	raw store.Store
	// columns returns every stored value of the user-data columns, read
	// past the adapter (a SELECT); nil where the adapter has no database.
	columns func(t *testing.T) [][]byte
	// files returns the bytes of every file of the database; nil where it
	// has none.
	files func(t *testing.T) [][]byte
	// beginTx begins a transaction of the application's own for
	// Transactional Enqueue, with its commit; nil without the capability.
	beginTx func(t *testing.T) (tx any, commit func() error)
}

const pgURLEnv = "BACKWAVE_TEST_POSTGRES_URL"

func backends() []backend {
	return []backend{
		{"memstore", func(t *testing.T) opened {
			return opened{raw: memstore.New(memstore.Options{Clock: shell.WallClock{}})}
		}},
		{"sqlite", openSQLite},
		{"postgres", openPostgres},
	}
}

func openSQLite(t *testing.T) opened {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	app, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return opened{
		raw: s,
		columns: func(t *testing.T) [][]byte {
			return selectAll(t, func(q string) ([][]byte, error) { return sqlColumn(app, q) },
				`SELECT payload FROM backwave_job_payload`,
				`SELECT output FROM backwave_job_output`,
				`SELECT CAST(failure_detail AS BLOB) FROM backwave_job_transition WHERE failure_detail IS NOT NULL`,
				`SELECT payload FROM backwave_schedule WHERE payload IS NOT NULL`)
		},
		files: func(t *testing.T) [][]byte {
			var out [][]byte
			for _, suffix := range []string{"", "-wal", "-journal"} {
				b, err := os.ReadFile(path + suffix)
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, b)
			}
			return out
		},
		beginTx: func(t *testing.T) (any, func() error) {
			tx, err := app.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			return tx, tx.Commit
		},
	}
}

func openPostgres(t *testing.T) opened {
	t.Helper()
	url := os.Getenv(pgURLEnv)
	if url == "" {
		t.Skipf("%s is not set", pgURLEnv)
	}
	ctx := context.Background()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	schema := "bwcrypt_" + hex.EncodeToString(b)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(cctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		pool.Close()
	})
	s, err := postgres.OpenPool(ctx, pool, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return opened{
		raw: s,
		columns: func(t *testing.T) [][]byte {
			return selectAll(t, func(q string) ([][]byte, error) {
				rows, err := pool.Query(ctx, strings.ReplaceAll(q, "S.", schema+"."))
				if err != nil {
					return nil, err
				}
				return pgx.CollectRows(rows, pgx.RowTo[[]byte])
			},
				`SELECT payload FROM S.job_payload`,
				`SELECT output FROM S.job WHERE output IS NOT NULL`,
				`SELECT convert_to(failure_detail, 'UTF8') FROM S.job_transition WHERE failure_detail IS NOT NULL`,
				`SELECT payload FROM S.schedule WHERE payload IS NOT NULL`)
		},
		beginTx: func(t *testing.T) (any, func() error) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return tx, func() error { return tx.Commit(ctx) }
		},
	}
}

func sqlColumn(db *sql.DB, q string) ([][]byte, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

func selectAll(t *testing.T, run func(q string) ([][]byte, error), queries ...string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, q := range queries {
		vals, err := run(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, vals...)
	}
	return out
}

// containsAny reports the first of secrets found in any of blobs.
func containsAny(blobs [][]byte, secrets ...string) (string, bool) {
	for _, b := range blobs {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				return s, true
			}
		}
	}
	return "", false
}
