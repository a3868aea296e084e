package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/internal/privatedb"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// poolerEnv names the variable that runs the tests through a private
// PgBouncer in transaction pooling mode, started in front of the server
// BACKWAVE_TEST_POSTGRES_URL names: set it to 1 (pgbouncer must be
// installed).
const poolerEnv = "BACKWAVE_TEST_PGBOUNCER"

// modePgBouncer is the pgx connection mode through a transaction pooler
// (pooler=transaction), with the hint listener going to the server directly
// (listen=).
const modePgBouncer mode = "pgbouncer"

// targets are the connection modes the Conformance Suite and the
// differential run cover: both direct modes and the pooler.
var targets = []mode{modePgx, modeSQL, modePgBouncer}

// skipUnlessMode skips a test of mode m whose server is not there. Under
// the race detector the whole Conformance Suite through the pooler would
// push the package past go test's default timeout on a small machine, so
// there only the differential run (quick) and the TestPooler tests go
// through it; .ci/run runs the suite through the pooler without -race.
func skipUnlessMode(t testing.TB, m mode) {
	t.Helper()
	if m == modePgBouncer {
		sharedPooler(t)
		if raceEnabled && strings.HasPrefix(t.Name(), "TestConformance/") {
			t.Skip("the Conformance Suite through the pooler runs without -race (.ci/run: go test -run 'TestConformance/pgbouncer' ./store/postgres/)")
		}
	}
}

// poolerState is the package's shared private PgBouncer, started at the
// first test that needs it and stopped by TestMain.
var poolerState struct {
	once sync.Once
	b    *privatedb.PgBouncer
	err  error
	dir  string
}

// sharedPooler returns the package's private PgBouncer in transaction mode
// in front of the test server, or skips the test.
func sharedPooler(t testing.TB) *privatedb.PgBouncer {
	t.Helper()
	u := testURL(t)
	if os.Getenv(poolerEnv) == "" {
		t.Skipf("%s is not set: set it to 1 (with pgbouncer installed) to run the PostgreSQL adapter's tests through a private PgBouncer in transaction mode", poolerEnv)
	}
	poolerState.once.Do(func() {
		poolerState.dir, poolerState.err = os.MkdirTemp("", "backwave-pgbouncer-")
		if poolerState.err != nil {
			return
		}
		poolerState.b, poolerState.err = startPooler(u, poolerState.dir, 20)
	})
	if poolerState.err != nil {
		t.Fatalf("private PgBouncer: %v", poolerState.err)
	}
	return poolerState.b
}

// startPooler starts a private PgBouncer in transaction mode with poolSize
// server connections in front of the server u names, in a directory under
// within.
func startPooler(u, within string, poolSize int) (*privatedb.PgBouncer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return privatedb.StartPgBouncerFor(ctx, u, within, poolSize)
}

// stopSharedPooler stops the shared PgBouncer, if one was started.
func stopSharedPooler() error {
	if poolerState.b == nil {
		return nil
	}
	defer os.RemoveAll(poolerState.dir)
	return poolerState.b.Stop()
}

// poolerURL is the test database's URL through b with pooler=transaction,
// and listen= naming the server directly unless listen is false.
func poolerURL(t testing.TB, b *privatedb.PgBouncer, listen bool) string {
	t.Helper()
	direct := testURL(t)
	through, err := b.Through(direct)
	if err != nil {
		t.Fatal(err)
	}
	u, err := neturl.Parse(through)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pooler", postgres.PoolerTransaction)
	if listen {
		q.Set("listen", direct)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// schemaExists reports whether schema exists, asked on a direct connection.
func schemaExists(t *testing.T, schema string) bool {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestPoolerBadListen refuses, at Open and before anything is written, a
// pooler URI whose listen= goes through the pooler: named as the pooler's own
// address, or spelled differently (localhost) so that only the probe NOTIFY
// finds it out. A bad pooler= value is refused too.
func TestPoolerBadListen(t *testing.T) {
	t.Parallel()
	b := sharedPooler(t)
	through := poolerURL(t, b, false)
	sameHost := withParam(t, through, "listen", b.URL("test"))
	otherSpelling := withParam(t, through, "listen", strings.Replace(b.URL("test"), "127.0.0.1", "localhost", 1)+"&default_query_exec_mode=exec")
	for _, tc := range []struct {
		name, url, want string
	}{
		{"listen is the pooler", sameHost, "the transaction pooler itself"},
		{"listen goes through the pooler", otherSpelling, "did not hear"},
		{"unknown pooler mode", withParam(t, through, "pooler", "statement"), `pooler="statement"`},
		{"cached statements behind the pooler", withParam(t, through, "default_query_exec_mode", "cache_statement"), "default_query_exec_mode must be exec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := randomSchema(t)
			dropSchemaAtCleanup(t, testURL(t), schema)
			s, err := postgres.Open(t.Context(), tc.url, postgres.Options{Schema: schema})
			if err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, store.ErrInvalidParams) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v; want store.ErrInvalidParams saying %q", err, tc.want)
			}
			if schemaExists(t, schema) {
				t.Fatalf("Open refused the URL but created schema %s", schema)
			}
		})
	}
}

// TestPoolerHints: behind the pooler with listen= naming the server, a
// Wake-Up Hint of an insert made through the pooler arrives; without
// listen=, Open says once that workers poll, and no listener runs.
func TestPoolerHints(t *testing.T) {
	t.Parallel()
	b := sharedPooler(t)
	ctx := t.Context()

	s := openStore(t, modePgBouncer, postgres.Options{})
	heard := make(chan string, 16)
	defer s.SubscribeHints(func(q string) { heard <- q })()
	if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "hinted", MaxAttempts: 1}}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		select {
		case q := <-heard:
			got = q == "hinted"
		case <-deadline:
			t.Fatal("no Wake-Up Hint for Queue hinted through listen= within 10s")
		}
	}

	var logs bytes.Buffer
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, testURL(t), schema)
	polled, err := postgres.Open(ctx, poolerURL(t, b, false), postgres.Options{Schema: schema,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer polled.Close()
	if n := strings.Count(logs.String(), "workers find new jobs by polling"); n != 1 {
		t.Fatalf("Open without listen= behind a pooler logged the polling notice %d times, want once: %s", n, logs.String())
	}
	quiet := make(chan string, 16)
	defer polled.SubscribeHints(func(q string) { quiet <- q })()
	if _, err := polled.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "unheard", MaxAttempts: 1}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case q := <-quiet:
		t.Fatalf("a hint (%q) arrived through a store with no listener", q)
	case <-time.After(500 * time.Millisecond):
	}
	if n := strings.Count(logs.String(), "polling"); n != 1 {
		t.Fatalf("the polling notice was said %d times, want once", n)
	}
}

// TestPoolerMigrationLockExcludes holds the Coordinated Migration lock of a
// store behind a PgBouncer with two server connections (a migration behind a
// pooler needs two at once: the lock's and its own) and requires a second
// store's Migrate to wait for it. A session advisory lock taken through the
// pooler would be held by a server session the pooler then gives to the
// second store's statements: its try-lock would succeed and both would
// migrate at once.
func TestPoolerMigrationLockExcludes(t *testing.T) {
	t.Parallel()
	sharedPooler(t) // skips without a pooler
	dir, err := os.MkdirTemp("", "backwave-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := startPooler(testURL(t), dir, 2)
	if err != nil {
		t.Fatalf("private PgBouncer: %v", err)
	}
	defer b.Stop()
	url := poolerURL(t, b, false)
	a := openStoreURL(t, url, postgres.Options{})
	release, err := postgres.HoldMigrationLock(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	second, err := postgres.Open(ctx, url, postgres.Options{Schema: a.Schema()})
	if err == nil {
		_ = second.Close()
		release()
		t.Fatal("a second store migrated while the first held the migration lock: the lock is not exclusive behind the pooler")
	}
	release()
	again, err := postgres.Open(t.Context(), url, postgres.Options{Schema: a.Schema()})
	if err != nil {
		t.Fatalf("Open after the lock's release: %v", err)
	}
	_ = again.Close()
}

// openStoreURL opens a store on url in a fresh schema (unless opts names
// one), dropped at cleanup.
func openStoreURL(t testing.TB, url string, opts postgres.Options) *postgres.Store {
	t.Helper()
	if opts.Schema == "" {
		opts.Schema = randomSchema(t)
		dropSchemaAtCleanup(t, testURL(t), opts.Schema)
	}
	s, err := postgres.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("open store on %s: %v", url, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestPoolerUnawareErrorSays: a store not told it is behind a transaction
// pooler fails on the named prepared statements it caches, and the error
// says what to add.
func TestPoolerUnawareErrorSays(t *testing.T) {
	t.Parallel()
	b := sharedPooler(t)
	url := strings.Replace(poolerURL(t, b, false), "pooler=transaction", "", 1)
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, testURL(t), schema)
	ctx := t.Context()
	s, err := postgres.Open(ctx, url, postgres.Options{Schema: schema})
	if err != nil {
		if !strings.Contains(err.Error(), "pooler=transaction") {
			t.Fatalf("Open failed without the pooler advice: %v", err)
		}
		t.Logf("Open, unaware of the pooler, failed with the advice: %v", err)
		return
	}
	defer s.Close()
	// Many goroutines, each statement on whichever server session the
	// pooler gives: one soon lacks a statement another session prepared.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 50 {
				_, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: fmt.Sprintf("q%d", (i+k)%3), MaxAttempts: 1}}})
				if err == nil {
					_, err = s.JobClaim(ctx, store.ClaimParams{Queues: []string{"q0", "q1", "q2"}, Worker: job.WorkerID(fmt.Sprint("w", i)), Limit: 1, LeaseDuration: time.Minute})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if strings.Contains(err.Error(), "pooler=transaction") {
			t.Logf("a store unaware of the pooler failed with the advice: %v", err)
			return
		}
		t.Logf("an error without the pooler advice: %v", err)
	}
	t.Skip("no prepared-statement error arose in this run (the pooler happened to keep each client on one server session)")
}

// TestParseURIPooler: pooler= and listen= become Options and leave the
// connection string pgx is given.
func TestParseURIPooler(t *testing.T) {
	t.Parallel()
	direct := "postgres://app@db:5432/app?sslmode=disable"
	u, err := neturl.Parse("postgres://app@bouncer:6432/app?sslmode=disable&pooler=transaction&schema=jobs&listen=" + neturl.QueryEscape(direct))
	if err != nil {
		t.Fatal(err)
	}
	conn, opts, err := postgres.ParseURI(u)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Pooler != postgres.PoolerTransaction || opts.ListenURL != direct || opts.Schema != "jobs" {
		t.Fatalf("ParseURI options: pooler %q, listen %q, schema %q", opts.Pooler, opts.ListenURL, opts.Schema)
	}
	if strings.Contains(conn, "pooler") || strings.Contains(conn, "listen") {
		t.Fatalf("ParseURI left pooler= or listen= in the connection string %q", conn)
	}
	if _, err := postgres.Open(t.Context(), "host=bouncer port=6432 pooler=transaction", postgres.Options{}); !errors.Is(err, store.ErrInvalidParams) {
		t.Fatalf("Open of a key=value DSN with pooler=: %v, want store.ErrInvalidParams", err)
	}
}
