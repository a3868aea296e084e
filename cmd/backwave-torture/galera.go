package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/backwave/backwave/internal/privatedb"
)

// galeraNodes is the size of the private Galera cluster.
const galeraNodes = 3

// galeraGroupPort is the first node's group communication port: node i
// uses it +10·i, and the two ports after for its state transfers.
const galeraGroupPort = 24670

// startPrivateGalera starts the run's private 3-node Galera cluster in dir,
// its SQL ports port, port+1 and port+2 on 127.0.0.1, each node with the
// single server's settings.
func startPrivateGalera(ctx context.Context, dir, within string, port int) (*privatedb.Galera, error) {
	ports := make([]int, galeraNodes)
	for i := range ports {
		ports[i] = port + i
	}
	return privatedb.StartGalera(ctx, privatedb.GaleraConfig{
		Dir: dir, Within: within, Nodes: galeraNodes, Ports: ports, GroupPort: galeraGroupPort,
		Settings: map[string]string{
			"max-connections":         "420",
			"innodb-buffer-pool-size": "64M",
			"skip-log-bin":            "",
			"log-warnings":            "1",
		},
	})
}

// slotNumber is N of a worker slot "wN".
func slotNumber(slot string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(slot, "w"))
	return n
}

// workerNode spreads the workers over a Galera cluster's nodes: worker
// slot i connects to node (i-1) mod 3, the producer, operator, reader and
// coordinator to the first. Nil (the run's URI) on the other targets.
func (c *coordinator) workerNode(i int) func(*childConfig) {
	if c.galera == nil || i < 1 {
		return nil
	}
	node := c.galera.Nodes()[(i-1)%galeraNodes]
	uri := node.URL("test") + "?schema=" + c.schema
	return func(cfg *childConfig) { cfg.URI = uri }
}

// crashNode SIGKILLs the mariadbd of a random node other than the first
// (whose clients are the producer, the operator, the reader and the
// coordinator) and starts it again 2 s later, waiting until it has
// rejoined and caught up.
func (c *coordinator) crashNode(ctx context.Context, r *rand.Rand) {
	if c.galera == nil {
		return
	}
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	i := 1 + r.IntN(galeraNodes-1)
	node := c.galera.Nodes()[i]
	from := time.Now()
	err := node.Stop(ctx, privatedb.Immediate)
	if err == nil {
		sleepCtx(ctx, 2*time.Second)
		err = c.galera.RestartNode(ctx, i, privatedb.Fast)
	}
	c.fault(faultNodeCrash, from, fmt.Sprintf("node %d: SIGKILL of mariadbd, a new one 2 s later, rejoined (%v)", i+1, errOrNil(err)))
	c.logf("node_crash of node %d took %s (%v)", i+1, time.Since(from).Round(time.Millisecond), errOrNil(err))
}

// galeraNotes reads each node's certification counters for the report:
// local commits, certification failures (this node's transactions that
// lost to another node's at commit) and brute-force aborts (local
// transactions a replicated one aborted). A node's counters restart with
// it, so a crashed node's count only since its last start.
func (c *coordinator) galeraNotes(ctx context.Context) []string {
	if c.galera == nil {
		return nil
	}
	var parts []string
	var commits, failed, bf int64
	for i, node := range c.galera.Nodes() {
		db, err := sql.Open("mysql", node.DSN(""))
		if err != nil {
			continue
		}
		// SHOW cannot take a placeholder; the names are this file's own.
		get := func(name string) int64 {
			var n string
			var v int64
			if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
				return -1
			}
			return v
		}
		lc, cf, ba := get("wsrep_local_commits"), get("wsrep_local_cert_failures"), get("wsrep_local_bf_aborts")
		_ = db.Close()
		commits, failed, bf = commits+lc, failed+cf, bf+ba
		parts = append(parts, fmt.Sprintf("node %d: %d commits, %d certification failures, %d brute-force aborts", i+1, lc, cf, ba))
	}
	rate := 0.0
	if commits+failed > 0 {
		rate = float64(failed+bf) / float64(commits+failed) * 100
	}
	return []string{fmt.Sprintf("Galera certification (since each node's last start): %s; conflicts (certification failures and brute-force aborts) per local commit attempt: %.2f%%. Each conflict is a deadlock error (1213) at commit or at the next statement, which the adapter retries.", strings.Join(parts, "; "), rate)}
}
