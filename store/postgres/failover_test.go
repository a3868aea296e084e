package postgres_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/internal/privatedb"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// TestFailoverMultiHost opens a store on a private two-node synchronous
// Patroni cluster through the multi-host URI a user writes, fails the
// primary over (SIGKILL of its postmaster), and sees the store write again
// on the new primary, the job acknowledged before the kill kept, and the
// Wake-Up Hint listener reconnected to the new primary and delivering.
func TestFailoverMultiHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, Patroni and two PostgreSQL servers")
	}
	if _, _, err := privatedb.PatroniBins(); err != nil {
		t.Skipf("no Patroni: %v", err)
	}
	work, err := os.MkdirTemp("", "backwave-failover-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	var ports []int
	for seen := map[int]bool{}; len(ports) < 6; {
		p, err := privatedb.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ha, err := privatedb.StartPatroni(ctx, privatedb.PatroniConfig{
		Dir: filepath.Join(work, "ha"), Within: work, Synchronous: true,
		Ports: ports[0:2], RESTPorts: ports[2:4], EtcdPort: ports[4], EtcdPeerPort: ports[5],
		Settings: map[string]string{"fsync": "off", "max_connections": "60"},
	})
	if err != nil {
		t.Fatalf("StartPatroni: %v", err)
	}
	defer func() { _ = ha.Stop() }()

	const schema = "failover_t"
	raw := ha.URL("postgres") + "&schema=" + schema
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("the multi-host URI %s: %v", raw, err)
	}
	conn, opts, err := postgres.ParseURI(u)
	if err != nil {
		t.Fatalf("ParseURI(%s): %v", raw, err)
	}
	opts.ListenerReconnectDelay = 200 * time.Millisecond
	s, err := postgres.Open(ctx, conn, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", raw, err)
	}
	defer s.Close()

	var mu sync.Mutex
	heard := map[string]int{}
	defer s.SubscribeHints(func(q string) {
		mu.Lock()
		heard[q]++
		mu.Unlock()
	})()
	waitHint := func(q string) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for {
			mu.Lock()
			n := heard[q]
			mu.Unlock()
			if n > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no Wake-Up Hint for Queue %s within 45s", q)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	insert := func(q string) []int64 {
		t.Helper()
		var last error
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			ids, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "failover.test", Queue: q, Payload: []byte(`{}`), MaxAttempts: 3}}})
			if err == nil {
				return []int64{int64(ids[0])}
			}
			last = err
		}
		t.Fatalf("enqueue to %s never succeeded; last error: %v", q, last)
		return nil
	}
	before := insert("before")
	waitHint("before")

	old := ha.Primary(ctx)
	from := time.Now()
	if err := ha.KillPostmaster(old); err != nil {
		t.Fatal(err)
	}
	now, err := ha.WaitPrimary(ctx, old, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	insert("after")
	t.Logf("node %d → node %d; the store enqueued again %s after the kill", old+1, now+1, time.Since(from).Round(time.Millisecond))
	waitHint("after")
	t.Logf("the listener delivered from the new primary %s after the kill", time.Since(from).Round(time.Millisecond))

	c, err := pgx.Connect(ctx, ha.NodeURL(now, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var listeners, kept int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, "backwave-hints:"+schema).Scan(&listeners); err != nil {
		t.Fatal(err)
	}
	if listeners != 1 {
		t.Fatalf("%d hint listeners on the new primary, want 1", listeners)
	}
	if err := c.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.job WHERE id = $1`, before[0]).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 1 {
		t.Fatalf("job %d, acknowledged before the failover, is gone from the new primary", before[0])
	}
}
