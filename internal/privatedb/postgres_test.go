package privatedb

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// workDir makes a fresh directory the way the torture command makes its
// work directory (os.MkdirTemp: mode 0700, owned by the caller, root when
// run as root) and removes it after the test.
func workDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "privatedb-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// TestPostgresStartRestartStop starts a real private cluster in a 0700
// work directory — as root the server runs as the postgres OS user, which
// must be let through it — crashes and restarts it, and stops it.
func TestPostgresStartRestartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	if _, err := PostgresBin(); err != nil {
		t.Skipf("no private PostgreSQL: %v", err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	work := workDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg, err := StartPostgres(ctx, PostgresConfig{
		Dir: filepath.Join(work, "pg"), Within: work, Port: port,
		Settings: map[string]string{"fsync": "off", "max_connections": "30", "application_name": "it's private"},
	})
	if err != nil {
		t.Fatalf("StartPostgres: %v", err)
	}
	t.Logf("the cluster runs as the %s OS user (uid %d) on 127.0.0.1:%d", pg.Account().Name, pg.Account().UID, port)
	defer func() {
		if err := pg.Stop(context.Background(), Fast); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	query := func(q string) string {
		t.Helper()
		c, err := pgx.Connect(ctx, pg.URL("postgres"))
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer c.Close(ctx)
		if !strings.HasPrefix(q, "SELECT") && !strings.HasPrefix(q, "SHOW") {
			if _, err := c.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return ""
		}
		var s string
		if err := c.QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s
	}
	if got := query("SHOW max_connections"); got != "30" {
		t.Errorf("max_connections = %s, want the configured 30", got)
	}
	if got := query("SHOW application_name"); got != "it's private" {
		t.Errorf("application_name = %q, want the configured, quoted value", got)
	}
	if got := query("SELECT current_setting('listen_addresses') || ' ' || current_setting('port')"); got != "127.0.0.1 "+strconv.Itoa(port) {
		t.Errorf("listens on %s, want 127.0.0.1 %d", got, port)
	}
	query("CREATE TABLE kept AS SELECT 1 AS n")
	if err := pg.Restart(ctx, Immediate); err != nil {
		t.Fatalf("Restart(Immediate): %v", err)
	}
	if got := query("SELECT count(*)::text FROM kept"); got != "1" {
		t.Errorf("after the crash restart, kept has %s rows, want 1", got)
	}
	if err := pg.Restart(ctx, Fast); err != nil {
		t.Fatalf("Restart(Fast): %v", err)
	}
	if err := CheckPort(port); err == nil {
		t.Errorf("CheckPort(%d) passes while the cluster listens on it", port)
	}
	if err := pg.Start(ctx); err == nil || !strings.Contains(err.Error(), "already answers") {
		t.Errorf("a second Start: %v, want the port refused", err)
	}
	if _, err := StartPostgres(ctx, PostgresConfig{Dir: filepath.Join(work, "pg"), Within: work, Port: port + 1}); err == nil || !strings.Contains(err.Error(), "already holds a cluster") {
		t.Errorf("a second initdb of the same directory: %v, want it refused", err)
	}
	acct := pg.Account()
	st, err := osFS{}.stat(pg.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	if st.uid != acct.UID || st.mode.Perm() != 0o700 {
		t.Errorf("data directory: uid %d mode %04o, want the %s OS user's (uid %d), 0700", st.uid, st.mode.Perm(), acct.Name, acct.UID)
	}
}
