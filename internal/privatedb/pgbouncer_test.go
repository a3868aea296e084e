package privatedb

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPgBouncerTransactionMode starts a private cluster and a private
// PgBouncer in transaction mode in front of it, and shows the pooler's
// nature: a query through it reaches the cluster, and a session setting made
// outside a transaction is not kept from one transaction to the next once
// the server connection is another client's.
func TestPgBouncerTransactionMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server and a PgBouncer")
	}
	if _, err := PostgresBin(); err != nil {
		t.Skipf("no private PostgreSQL: %v", err)
	}
	if _, err := PgBouncerBin(); err != nil {
		t.Skipf("no private PgBouncer: %v", err)
	}
	work := workDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pgPort, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pg, err := StartPostgres(ctx, PostgresConfig{Dir: filepath.Join(work, "pg"), Within: work, Port: pgPort,
		Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		t.Fatalf("StartPostgres: %v", err)
	}
	defer func() { _ = pg.Stop(context.Background(), Fast) }()
	bPort, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	b, err := StartPgBouncer(ctx, PgBouncerConfig{Dir: filepath.Join(work, "pgbouncer"), Within: work, Port: bPort,
		ServerPort: pgPort, PoolSize: 1})
	if err != nil {
		t.Fatalf("StartPgBouncer: %v", err)
	}
	defer func() {
		if err := b.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	connect := func() *pgx.Conn {
		t.Helper()
		cfg, err := pgx.ParseConfig(b.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatalf("connect through the pooler: %v", err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		return c
	}
	a, other := connect(), connect()
	var port int
	if err := a.QueryRow(ctx, `SELECT current_setting('port')::int`).Scan(&port); err != nil {
		t.Fatal(err)
	}
	if port != pgPort {
		t.Fatalf("the pooler reached a server on port %d, want the private cluster's %d", port, pgPort)
	}
	if _, err := a.Exec(ctx, `SET work_mem = '7MB'`); err != nil {
		t.Fatal(err)
	}
	// One server connection (PoolSize 1): the other client's query runs on
	// the session a's SET changed, which is therefore not a's alone.
	var got string
	if err := other.QueryRow(ctx, `SHOW work_mem`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "7MB" {
		t.Fatalf("the other client sees work_mem %q: the pooler is not sharing one server session in transaction mode", got)
	}
}
