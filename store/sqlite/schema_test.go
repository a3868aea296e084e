package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
)

// TestDefaultSchemaNameEmitsIdenticalSQL checks the glossary's Schema Name
// entry: "the adapters author every query and DDL script against the literal
// backwave and rename it at one choke point, so the default emits
// byte-identical SQL."
func TestDefaultSchemaNameEmitsIdenticalSQL(t *testing.T) {
	t.Parallel()
	texts := allSQL(t, newQueries(DefaultSchema))
	for _, m := range migrations {
		if got := schemaName(DefaultSchema).Rename(m.sql); got != m.sql {
			t.Fatalf("default Rename changed migration %s", m.name)
		}
	}
	if len(texts) < 20 {
		t.Fatalf("found %d statements; the reflection walk over queries is broken", len(texts))
	}
	for _, q := range texts {
		if !strings.Contains(q, "backwave_") {
			t.Errorf("statement names no backwave_ table: %s", q)
		}
	}
	custom := newQueries("app_")
	for _, q := range allSQL(t, custom) {
		if strings.Contains(q, "backwave_") {
			t.Errorf("renamed statement still names backwave_: %s", q)
		}
	}
}

// allSQL returns every statement of q, nested groups included.
func allSQL(t *testing.T, q *queries) []string {
	t.Helper()
	var out []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.Struct {
				walk(f)
				continue
			}
			s := v.Field(i).String()
			if s != "" && !strings.HasPrefix(strings.TrimSpace(s), "AND") && !strings.HasPrefix(strings.TrimSpace(s), "ORDER") {
				out = append(out, s)
			}
		}
	}
	walk(reflect.ValueOf(q).Elem())
	return out
}

func TestValidateSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"backwave_", true},
		{"app", true},
		{"App_Jobs_2", true},
		{"_x", true},
		{"", false},
		{"2app", false},
		{"app-jobs", false},
		{"app.jobs", false},
		{"app jobs", false},
		{`a"b`, false},
		{strings.Repeat("a", maxSchemaLen+1), false},
		{"sqlite_", false}, // SQLite's own tables
		{"information_schema", false},
	} {
		err := ValidateSchema(tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, store.ErrInvalidParams)) {
			t.Errorf("ValidateSchema(%q) = %v, want ok=%t", tc.name, err, tc.ok)
		}
	}
}

// TestMigrateCoordinated checks the glossary's Coordinated Migration entry:
// every migrator attempts, the file's write lock orders them, and each
// re-checks the version (and a migration's step progress, migrate_step.go)
// under it, so every migration is applied exactly once across them. A
// migration in steps lets writers in between its steps, and a waiting
// migrator too: it may apply a later step or migration itself.
func TestMigrateCoordinated(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "jobs.db")
	const n = 6
	stores := make([]*Store, n)
	for i := range stores {
		s, err := connect(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	results := make([]MigrateResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { results[i], errs[i] = s.Migrate(t.Context()) })
	}
	wg.Wait()
	by := map[string]int{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		if results[i].To != latestVersion() {
			t.Fatalf("migrator %d ended at version %d, want %d", i, results[i].To, latestVersion())
		}
		for _, name := range results[i].Applied {
			by[name]++
		}
	}
	for _, m := range migrations {
		if name := fmt.Sprintf("%04d_%s", m.version, m.name); by[name] != 1 {
			t.Fatalf("migration %s applied by %d migrators, want exactly 1", name, by[name])
		}
	}
	var rows int
	if err := stores[0].r.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM backwave_schema_version`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(migrations) {
		t.Fatalf("versions table has %d rows, want %d", rows, len(migrations))
	}
}

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "jobs.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for range 3 {
		res, err := s.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Applied) != 0 || res.From != latestVersion() || res.To != latestVersion() {
			t.Fatalf("Migrate on a current schema = %+v, want nothing applied", res)
		}
	}
}

// TestManualMigrate: with ManualMigrate, Open migrates nothing and refuses a
// schema that is behind; after Migrate it opens.
func TestManualMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	if _, err := Open(ctx, path, Options{ManualMigrate: true}); !errors.Is(err, ErrSchemaBehind) {
		t.Fatalf("Open(ManualMigrate) on a fresh file: %v, want ErrSchemaBehind", err)
	}
	res, err := Migrate(ctx, path, Options{ManualMigrate: true})
	if err != nil || res.From != 0 || res.To != latestVersion() || len(res.Applied) != len(migrations) {
		t.Fatalf("Migrate(path) = %+v, %v", res, err)
	}
	s, err := Open(ctx, path, Options{ManualMigrate: true})
	if err != nil {
		t.Fatalf("Open(ManualMigrate) after Migrate: %v", err)
	}
	_ = s.Close()
}

// TestSchemaNamesCoexist: two Schema Names in one file are two independent
// stores.
func TestSchemaNamesCoexist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	a, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	b, err := Open(ctx, path, Options{Schema: "other_"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	if _, err := a.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}}); err != nil {
		t.Fatal(err)
	}
	counts, err := b.JobCountByState(ctx, store.CountParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 0 {
		t.Fatalf("store under schema other_ sees %v", counts)
	}
	var n int
	if err := b.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM other_job`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("other_job: %d rows, %v", n, err)
	}
}

// TestConnectionSettings: WAL with its size limit, the documented
// synchronous default and its override, the busy timeout, and BEGIN
// IMMEDIATE on the write connection.
func TestConnectionSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		sync Synchronous
		want int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{{"", 2}, {SynchronousNormal, 1}, {SynchronousFull, 2}} {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "jobs.db"), Options{Synchronous: tc.sync, BusyTimeout: 1234 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for name, db := range map[string]*sql.DB{"write": s.w, "read": s.r} {
			var mode string
			var syncLevel, busy int
			if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&syncLevel); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
				t.Fatal(err)
			}
			// The log shrinks back after a long reader has let a checkpoint
			// through, instead of keeping its largest size for good.
			var walLimit int
			if err := db.QueryRowContext(ctx, `PRAGMA journal_size_limit`).Scan(&walLimit); err != nil {
				t.Fatal(err)
			}
			if walLimit != walSizeLimit {
				t.Errorf("%s connection: journal_size_limit %d, want %d", name, walLimit, walSizeLimit)
			}
			if mode != "wal" || syncLevel != tc.want || busy != 1234 {
				t.Errorf("synchronous %q, %s connection: journal_mode %s, synchronous %d, busy_timeout %d; want wal, %d, 1234",
					tc.sync, name, mode, syncLevel, busy, tc.want)
			}
		}
		// The read pool refuses writes.
		if _, err := s.r.ExecContext(ctx, `INSERT INTO backwave_queue (name) VALUES ('x')`); err == nil {
			t.Error("the read pool accepted a write")
		}
		_ = s.Close()
	}
	if _, err := Open(ctx, filepath.Join(t.TempDir(), "jobs.db"), Options{Synchronous: "off"}); !errors.Is(err, store.ErrInvalidParams) {
		t.Errorf("Open(synchronous off) = %v, want ErrInvalidParams", err)
	}
}
