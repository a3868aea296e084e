package privatedb

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGaleraReplicatesAndRejoins starts a real 3-node Galera cluster on
// loopback, writes on one node and reads on another, crashes a node
// (SIGKILL), writes while it is down, restarts it and finds the write
// there: it rejoined and caught up.
func TestGaleraReplicatesAndRejoins(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Galera cluster")
	}
	for _, f := range []string{"/usr/sbin/mariadbd", GaleraProvider} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("no private Galera: %v", err)
		}
	}
	var ports []int
	for range 3 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, p)
	}
	work := workDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The group ports are fixed (24570–24592), not asked of the kernel:
	// each node needs three in a row.
	g, err := StartGalera(ctx, GaleraConfig{
		Dir: filepath.Join(work, "galera"), Within: work, Ports: ports, GroupPort: 24570,
		Settings: map[string]string{"innodb-buffer-pool-size": "32M", "skip-log-bin": ""},
	})
	if err != nil {
		t.Fatalf("StartGalera: %v", err)
	}
	defer func() {
		if err := g.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	on := func(i int) *sql.DB {
		t.Helper()
		db, err := sql.Open("mysql", g.Nodes()[i].DSN("test"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	var size string
	var name string
	if err := on(0).QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_cluster_size'").Scan(&name, &size); err != nil || size != "3" {
		t.Fatalf("cluster size %q (%v), want 3", size, err)
	}
	if _, err := on(0).ExecContext(ctx, "CREATE TABLE r (id INT PRIMARY KEY, v INT) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := on(0).ExecContext(ctx, "INSERT INTO r VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	read := func(i, id int) int {
		t.Helper()
		var v int
		conn, err := on(i).Conn(ctx) // one session: wsrep_sync_wait makes its read wait for the cluster
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1"); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRowContext(ctx, "SELECT v FROM r WHERE id = ?", id).Scan(&v); err != nil {
			t.Fatalf("node %d, row %d: %v", i+1, id, err)
		}
		return v
	}
	if v := read(2, 1); v != 10 {
		t.Fatalf("node 3 reads %d, want 10", v)
	}
	if err := g.Nodes()[1].Stop(ctx, Immediate); err != nil {
		t.Fatal(err)
	}
	if _, err := on(2).ExecContext(ctx, "INSERT INTO r VALUES (2, 20)"); err != nil {
		t.Fatalf("a write while node 2 is down: %v", err)
	}
	if err := g.startNode(ctx, 1); err != nil {
		t.Fatalf("restart node 2: %v", err)
	}
	if v := read(1, 2); v != 20 {
		t.Fatalf("the restarted node 2 reads %d, want 20", v)
	}
	if err := g.RestartNode(ctx, 0, Immediate); err != nil {
		t.Fatalf("RestartNode(1, Immediate), the bootstrap node: %v", err)
	}
	if v := read(0, 2); v != 20 {
		t.Fatalf("the restarted node 1 reads %d, want 20", v)
	}
}
