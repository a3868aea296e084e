package privatedb

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMariaDBStartRestartStop starts a real private MariaDB server in a
// 0700 work directory — as root it runs as the mysql OS user, which must
// be let through it — writes a row, crashes it (SIGKILL) and restarts it,
// finds the committed row again, and stops it.
func TestMariaDBStartRestartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MariaDB server")
	}
	if _, err := os.Stat("/usr/sbin/mariadbd"); err != nil {
		t.Skipf("no private MariaDB: %v", err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	work := workDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m, err := StartMariaDB(ctx, MariaDBConfig{
		Dir: filepath.Join(work, "mdb"), Within: work, Port: port,
		Settings: map[string]string{"innodb-buffer-pool-size": "32M", "skip-log-bin": "", "max-connections": "40"},
	})
	if err != nil {
		t.Fatalf("StartMariaDB: %v", err)
	}
	t.Logf("the server runs as the %s OS user (uid %d) on 127.0.0.1:%d", m.Account().Name, m.Account().UID, port)
	defer func() {
		if err := m.Stop(context.Background(), Fast); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	exec := func(q string, args ...any) string {
		t.Helper()
		db, err := sql.Open("mysql", m.DSN("test"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if !strings.HasPrefix(q, "SELECT") {
			if _, err := db.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return ""
		}
		var s string
		if err := db.QueryRowContext(ctx, q, args...).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s
	}
	if got := exec("SELECT @@max_connections"); got != "40" {
		t.Errorf("max_connections = %s, want the setting's 40", got)
	}
	exec("CREATE TABLE kept (v INT) ENGINE=InnoDB")
	exec("INSERT INTO kept VALUES (7)")
	if err := m.Restart(ctx, Immediate); err != nil {
		t.Fatalf("Restart(Immediate): %v", err)
	}
	if got := exec("SELECT CAST(v AS CHAR) FROM kept"); got != "7" {
		t.Errorf("after a crash, the committed row reads %s, want 7", got)
	}
	if err := m.Restart(ctx, Fast); err != nil {
		t.Fatalf("Restart(Fast): %v", err)
	}
	if err := m.Start(ctx); err == nil {
		t.Error("Start of a running server succeeded")
	}
	if _, err := NewMariaDB(MariaDBConfig{Dir: filepath.Join(work, "other"), Port: 3306}); err == nil || !strings.Contains(err.Error(), "machine-wide") {
		t.Errorf("port 3306: %v, want a refusal of the machine-wide server's port", err)
	}
	if _, err := NewMariaDB(MariaDBConfig{Dir: filepath.Join(work, "other"), Port: port + 1, Settings: map[string]string{"port": "1"}}); err == nil {
		t.Error("a setting overriding the port was accepted")
	}
	if err := m.Init(ctx); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("Init over existing data: %v", err)
	}
}
