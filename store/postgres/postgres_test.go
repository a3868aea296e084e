package postgres_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/storetest"
	"github.com/backwave/backwave/vtime"
)

// urlEnv names the variable that points the tests at a PostgreSQL database,
// e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const urlEnv = "BACKWAVE_TEST_POSTGRES_URL"

// testURL returns the test database's URL or skips the test.
func testURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(urlEnv)
	if u == "" {
		t.Skipf("%s is not set: set it to a PostgreSQL URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL adapter's tests", urlEnv)
	}
	return u
}

// mode is a connection mode under test.
type mode string

const (
	modePgx mode = "pgx"
	modeSQL mode = "sql"
)

var modes = []mode{modePgx, modeSQL}

// randomSchema returns a fresh Schema Name for one test.
func randomSchema(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "bwtest_" + hex.EncodeToString(b)
}

// dropSchemaAtCleanup drops schema, and everything in it, when t ends.
func dropSchemaAtCleanup(t testing.TB, url, schema string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
}

// openStore opens a Store in mode on a fresh schema (unless opts names
// one), dropped along with the store at cleanup.
func openStore(t testing.TB, m mode, opts postgres.Options) *postgres.Store {
	t.Helper()
	return openStoreConns(t, m, opts, 0)
}

// openStoreConns is openStore with at most conns connections (0: the
// driver's default).
func openStoreConns(t testing.TB, m mode, opts postgres.Options, conns int) *postgres.Store {
	t.Helper()
	url := testURL(t)
	if opts.Schema == "" {
		opts.Schema = randomSchema(t)
		dropSchemaAtCleanup(t, url, opts.Schema)
	}
	ctx := context.Background()
	var (
		s   *postgres.Store
		err error
	)
	switch m {
	case modePgx:
		if conns > 0 {
			url = withParam(t, url, "pool_max_conns", strconv.Itoa(conns))
		}
		s, err = postgres.Open(ctx, url, opts)
	case modePgBouncer:
		url = poolerURL(t, sharedPooler(t), true)
		if conns > 0 {
			url = withParam(t, url, "pool_max_conns", strconv.Itoa(conns))
		}
		s, err = postgres.Open(ctx, url, opts)
	case modeSQL:
		db := openDB(t, url)
		if conns > 0 {
			db.SetMaxOpenConns(conns)
		}
		s, err = postgres.OpenDB(ctx, db, opts)
	default:
		t.Fatalf("unknown mode %q", m)
	}
	if err != nil {
		t.Fatalf("open store (%s): %v", m, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openDB opens a database/sql DB on pgx's stdlib driver, closed at cleanup.
func openDB(t testing.TB, url string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse %s: %v", urlEnv, err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// harness adapts a Store on a Manual clock to the Conformance Suite;
// WithHistory opens another store of mode m on the same clock in a schema
// of its own.
func harness(t *testing.T, m mode, s *postgres.Store, clock *vtime.Manual) storetest.Harness {
	return storetest.Harness{
		Store:   s,
		Now:     clock.Now,
		Advance: func(d time.Duration) { clock.Advance(d) },
		WithHistory: func(p store.HistoryPolicy) store.Store {
			schema, migrated := schemas.take(t)
			return openStore(t, m, postgres.Options{Schema: schema, SkipMigrate: migrated, Now: clock.Now, History: p})
		},
		RolledBack: func(t *testing.T, fn func(tx any)) {
			storetest.RollBackIn(t, openDB(t, testURL(t)), fn)
		},
	}
}

// schemaPool hands the Conformance Suite's tests migrated schemas to reuse:
// emptying a schema's tables costs a few milliseconds, creating and
// dropping one a hundred or more. A schema is used by one test at a time;
// TestMain drops them all at the end.
type schemaPool struct {
	mu    sync.Mutex
	free  []string
	all   []string
	admin *pgxpool.Pool
}

// schemas is the package's pool; only the Conformance Suite's harness uses
// it, so every other test keeps a schema of its own.
var schemas schemaPool

// take returns a free schema, or a fresh name for Open to migrate, and gives
// it back, emptied, when t ends (after the test's own cleanups).
func (p *schemaPool) take(t testing.TB) (schema string, migrated bool) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		schema, migrated = p.free[n-1], true
		p.free = p.free[:n-1]
	} else {
		schema = randomSchema(t)
		p.all = append(p.all, schema)
	}
	if p.admin == nil {
		pool, err := pgxpool.New(context.Background(), testURL(t))
		if err != nil {
			t.Fatal(err)
		}
		p.admin = pool
	}
	t.Cleanup(func() { p.give(t, schema) })
	return schema, migrated
}

// empty deletes every row of every table of schema but the migration
// bookkeeping, whatever tables later migrations add, and restarts the job
// id sequence.
func (p *schemaPool) empty(schema string) error {
	ctx := context.Background()
	rows, err := p.admin.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> 'migration' ORDER BY tablename`, schema)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, name := range tables {
		fmt.Fprintf(&b, "DELETE FROM %s.%s; ", schema, name)
	}
	fmt.Fprintf(&b, "ALTER SEQUENCE %s.job_id_seq RESTART", schema)
	_, err = p.admin.Exec(ctx, b.String())
	return err
}

// give empties schema and returns it to the pool; a schema that cannot be
// emptied is left for TestMain to drop.
func (p *schemaPool) give(t testing.TB, schema string) {
	err := p.empty(schema)
	if err != nil {
		t.Errorf("empty schema %s for reuse: %v", schema, err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, schema)
}

// dropAll drops every schema the pool made.
func (p *schemaPool) dropAll() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.admin == nil {
		return nil
	}
	defer p.admin.Close()
	for _, schema := range p.all {
		if _, err := p.admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			return fmt.Errorf("drop schema %s: %w", schema, err)
		}
	}
	return nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := schemas.dropAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	if err := stopSharedPooler(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// TestConformance runs the Conformance Suite in both connection modes and
// through a transaction pooler (modePgBouncer, when BACKWAVE_TEST_PGBOUNCER
// is set), each test on a schema no other running test uses, on a clock the
// suite moves (Options.Now).
func TestConformance(t *testing.T) {
	t.Parallel()
	testURL(t)
	for _, m := range targets {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			skipUnlessMode(t, m)
			newStore := func(t *testing.T) storetest.Harness {
				clock := vtime.NewManual(vtime.Epoch)
				schema, migrated := schemas.take(t)
				h := harness(t, m, openStore(t, m, postgres.Options{Schema: schema, SkipMigrate: migrated, Now: clock.Now}), clock)
				h.Peer = func(t *testing.T) store.Store {
					return openStore(t, m, postgres.Options{Schema: schema, SkipMigrate: true, Now: clock.Now})
				}
				return h
			}
			storetest.Run(t, newStore)
		})
	}
}

// withParam returns the URL u with the query parameter key set to value.
func withParam(t testing.TB, u, key, value string) string {
	t.Helper()
	parsed, err := neturl.Parse(u)
	if err != nil {
		t.Fatalf("parse %s: %v", urlEnv, err)
	}
	q := parsed.Query()
	q.Set(key, value)
	parsed.RawQuery = q.Encode()
	return parsed.String()
}

// withPath returns the URL u with its path (the database) replaced.
func withPath(t testing.TB, u, path string) string {
	t.Helper()
	parsed, err := neturl.Parse(u)
	if err != nil {
		t.Fatalf("parse %s: %v", urlEnv, err)
	}
	parsed.Path = path
	return parsed.String()
}

// withUser returns the URL u connecting as user, without a password.
func withUser(t testing.TB, u, user string) string {
	t.Helper()
	parsed, err := neturl.Parse(u)
	if err != nil {
		t.Fatalf("parse %s: %v", urlEnv, err)
	}
	parsed.User = neturl.User(user)
	return parsed.String()
}
