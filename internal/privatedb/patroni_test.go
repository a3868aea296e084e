package privatedb

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// freePorts returns n distinct free loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	seen := map[int]bool{}
	var ports []int
	for len(ports) < n {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports
}

// TestPatroniFailover starts a real two-node synchronous Patroni cluster
// with its etcd, SIGKILLs the primary's postmaster, and sees the standby
// promoted, the old primary rejoin as a standby, and a commit made before
// the kill readable through the multi-host URL after it.
func TestPatroniFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, Patroni and two PostgreSQL servers")
	}
	if _, _, err := PatroniBins(); err != nil {
		t.Skipf("no Patroni: %v", err)
	}
	ports := freePorts(t, 6)
	work := workDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := StartPatroni(ctx, PatroniConfig{
		Dir: filepath.Join(work, "ha"), Within: work, Synchronous: true,
		Ports: ports[0:2], RESTPorts: ports[2:4], EtcdPort: ports[4], EtcdPeerPort: ports[5],
		Settings: map[string]string{"fsync": "off", "max_connections": "40"},
	})
	if err != nil {
		t.Fatalf("StartPatroni: %v", err)
	}
	defer func() {
		if err := p.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	exec := func(q string) {
		t.Helper()
		c, err := pgx.Connect(ctx, p.URL("postgres"))
		if err != nil {
			t.Fatalf("connect %s: %v", p.URL("postgres"), err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
	old := p.Primary(ctx)
	if old < 0 {
		t.Fatal("no primary after start")
	}
	from := time.Now()
	if err := p.KillPostmaster(old); err != nil {
		t.Fatal(err)
	}
	now, err := p.WaitPrimary(ctx, old, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d promoted %s after the kill of node %d's postmaster", now+1, time.Since(from).Round(time.Millisecond), old+1)
	exec("INSERT INTO kept SELECT v + 1 FROM kept WHERE v = 42")
	if err := p.WaitHealthy(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d rejoined as a standby %s after the kill", old+1, time.Since(from).Round(time.Millisecond))
	c, err := pgx.Connect(ctx, p.NodeURL(old, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var standby bool
	var n int
	if err := c.QueryRow(ctx, "SELECT pg_is_in_recovery(), count(*) FROM kept").Scan(&standby, &n); err != nil {
		t.Fatal(err)
	}
	if !standby || n != 2 {
		t.Fatalf("old primary: in recovery %v with %d rows, want a standby with both rows", standby, n)
	}
}
