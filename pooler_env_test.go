package backwave_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/internal/privatedb"
)

// The root package's PostgreSQL cases run a second time through a private
// PgBouncer in transaction pooling mode, as a store behind Supabase's or
// Heroku's pooler runs, when BACKWAVE_TEST_PGBOUNCER is set (.ci/run sets
// it): the store with pooler=transaction and listen= naming the server
// directly, the application's own connections in pgx's exec mode (no named
// prepared statements, which PgBouncer 1.18 cannot carry across
// transactions).
const poolerEnv = "BACKWAVE_TEST_PGBOUNCER"

// pooler is the package's shared private PgBouncer, started by the first
// test that needs it and stopped by TestMain.
var pooler struct {
	once sync.Once
	b    *privatedb.PgBouncer
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pooler.b != nil {
		if err := pooler.b.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the private PgBouncer:", err)
			code = max(code, 1)
		}
	}
	if pooler.dir != "" {
		_ = os.RemoveAll(pooler.dir)
	}
	os.Exit(code)
}

// pooledURLs returns direct, the test server's URL, and through it the
// pooler: store, the store's URL (pooler=transaction, listen=direct), and
// app, the application's (exec mode). It skips the test unless both
// BACKWAVE_TEST_POSTGRES_URL and BACKWAVE_TEST_PGBOUNCER are set.
func pooledURLs(t *testing.T, direct string) (store, app string) {
	t.Helper()
	if os.Getenv(poolerEnv) == "" {
		t.Skipf("%s is not set: set it to 1 (with pgbouncer installed) to run the PostgreSQL cases through a private PgBouncer in transaction mode", poolerEnv)
	}
	pooler.once.Do(func() {
		if pooler.dir, pooler.err = os.MkdirTemp("", "backwave-root-pgbouncer-"); pooler.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pooler.b, pooler.err = privatedb.StartPgBouncerFor(ctx, direct, pooler.dir, 20)
	})
	if pooler.err != nil {
		t.Fatalf("private PgBouncer: %v", pooler.err)
	}
	through, err := pooler.b.Through(direct)
	if err != nil {
		t.Fatal(err)
	}
	with := func(set map[string]string) string {
		u, err := url.Parse(through)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		for k, v := range set {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	return with(map[string]string{"pooler": "transaction", "listen": direct}), with(map[string]string{"default_query_exec_mode": "exec"})
}
