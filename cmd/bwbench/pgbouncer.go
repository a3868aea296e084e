package main

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/backwave/backwave/internal/privatedb"
)

// The postgres-pgbouncer target: the PostgreSQL of -postgres reached through
// a private PgBouncer in transaction pooling mode, started by bwbench on a
// free loopback port for the run, as Supabase's, Heroku's and most managed
// deployments sit behind one. Each system connects as its docs say it must
// behind such a pooler:
//   - BackWave: pooler=transaction (no named prepared statements, a
//     transaction-level migration lock), with Wake-Up Hints LISTENed for on a
//     direct connection to the server (listen=, docs/production-postgres.md);
//   - River: pgx's exec mode (default_query_exec_mode=exec: no named
//     prepared statements) and PollOnly, River's setting for a pooler in
//     transaction mode, where LISTEN cannot work;
//   - raw: pgx's exec mode.
const tgPgBouncer = "postgres-pgbouncer"

// pgbouncerPoolSize is the pooler's server connections per database and
// user: as many as the systems' own pools (conns=8) with room for the
// admin pool's counts.
const pgbouncerPoolSize = 20

// isPG reports whether tg is on PostgreSQL, directly or through the pooler.
func isPG(tg string) bool { return tg == tgPostgres || tg == tgPgBouncer }

// pooledScenario reports whether sc runs on the pooler target: the drain and
// the latencies, which a pooler's extra hop and lost session state change.
func pooledScenario(sc string) bool {
	switch sc {
	case scDrain, scLatencyOn, scLatencyOff:
		return true
	}
	return false
}

// startPgBouncer starts the private PgBouncer of the postgres-pgbouncer
// target in front of the server of pgURL, in a directory of its own.
func startPgBouncer(ctx context.Context, pgURL string) (*privatedb.PgBouncer, func(), error) {
	if _, err := privatedb.PgBouncerBin(); err != nil {
		return nil, nil, err
	}
	within, err := os.MkdirTemp("", "bwbench-pgbouncer-")
	if err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pb, err := privatedb.StartPgBouncerFor(sctx, pgURL, within, pgbouncerPoolSize)
	if err != nil {
		_ = os.RemoveAll(within)
		return nil, nil, err
	}
	return pb, func() {
		_ = pb.Stop()
		_ = os.RemoveAll(within)
	}, nil
}

// pgbouncerVersion is the first line of pgbouncer --version, for the
// manifest.
func pgbouncerVersion() string {
	bin, err := privatedb.PgBouncerBin()
	if err != nil {
		return ""
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first)
}

// pooledURL turns u, a URL to the server, into system's URL through the
// pooler at addr: see tgPgBouncer. listen says whether BackWave hears
// Wake-Up Hints (false for latency-hints-off).
func pooledURL(u *url.URL, addr, system string, listen bool) {
	direct := *u
	dq := direct.Query()
	dq.Del("pool_max_conns")
	direct.RawQuery = dq.Encode()
	u.Host = addr
	q := u.Query()
	switch system {
	case sysBackWave:
		q.Set("pooler", "transaction")
		if listen {
			q.Set("listen", direct.String())
		}
	default:
		q.Set("default_query_exec_mode", "exec")
	}
	u.RawQuery = q.Encode()
}

// poolerAddr is the pooler's loopback host:port.
func poolerAddr(pb *privatedb.PgBouncer) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(pb.Port()))
}
