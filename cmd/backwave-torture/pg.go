package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/backwave/backwave/internal/privatedb"
	"github.com/jackc/pgx/v5"
)

// startPrivate creates and starts the run's private PostgreSQL cluster in
// dir (inside the work directory within), on 127.0.0.1 at port only: every
// PostgreSQL fault of a run — restarts, terminated backends, held
// connections, long transactions — is aimed at it and at nothing else.
// Run as root it runs as the postgres OS user, otherwise as the caller.
// fsync is off to spare the shared disk: a restart or an immediate
// shutdown kills server processes, not the host, so the page cache keeps
// every write. synchronous_commit stays on: with it off, a commit
// acknowledged to a client can vanish in the crash the crash_recovery cell
// injects, and the audits would find that loss (they did: double claims of
// one Attempt).
func startPrivate(ctx context.Context, dir, within string, port int) (*privatedb.Postgres, error) {
	pg, err := privatedb.StartPostgres(ctx, privatedb.PostgresConfig{
		Dir: dir, Within: within, Port: port,
		Settings: map[string]string{
			"max_connections":  "420",
			"fsync":            "off",
			"full_page_writes": "off",
			"shared_buffers":   "128MB",
			"log_min_messages": "warning",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("private cluster: %w", err)
	}
	return pg, nil
}

// sideApp marks the coordinator's own fault connections, which the
// terminators spare.
const sideApp = "torture-side"

func sideConnect(ctx context.Context, base string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		return nil, fmt.Errorf("side connection: %w", err)
	}
	cfg.RuntimeParams["application_name"] = sideApp
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("side connection: %w", err)
	}
	return c, nil
}

// terminate ends n random client connections of the run (not the side
// connections), returning how many it ended.
func terminate(ctx context.Context, base string, n int) (int, error) {
	c, err := sideConnect(ctx, base)
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var k int
	err = c.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM (
		SELECT pid FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
		  AND datname = current_database() AND application_name <> $1
		ORDER BY random() LIMIT $2) s) t`, sideApp, n).Scan(&k)
	if err != nil {
		return 0, fmt.Errorf("pg_terminate_backend: %w", err)
	}
	return k, nil
}

// killListeners ends every connection whose last statement was a LISTEN:
// the Wake-Up Hint listeners.
func killListeners(ctx context.Context, base string) (int, error) {
	c, err := sideConnect(ctx, base)
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var k int
	err = c.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND application_name <> $1 AND query ILIKE 'listen%') t`, sideApp).Scan(&k)
	if err != nil {
		return 0, fmt.Errorf("terminate listeners: %w", err)
	}
	return k, nil
}

// holdConnections opens n idle connections and holds them until ctx ends,
// returning how many it opened.
func holdConnections(ctx context.Context, base string, n int) (int, error) {
	var (
		mu    sync.Mutex
		conns []*pgx.Conn
	)
	var wg sync.WaitGroup
	slots := make(chan struct{}, 16)
	for range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			c, err := sideConnect(ctx, base)
			if err != nil {
				return // the server may refuse some: that is the pressure
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		})
	}
	wg.Wait()
	<-ctx.Done()
	for _, c := range conns {
		_ = c.Close(context.Background())
	}
	return len(conns), nil
}

// idleInTx opens a transaction that takes a transaction id (pinning the
// xmin horizon) and sits idle in it until ctx ends.
func idleInTx(ctx context.Context, base string) error {
	c, err := sideConnect(ctx, base)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	tx, err := c.Begin(ctx)
	if err != nil {
		return fmt.Errorf("idle in transaction: %w", err)
	}
	if _, err := tx.Exec(ctx, "SELECT txid_current()"); err != nil {
		return fmt.Errorf("idle in transaction: %w", err)
	}
	<-ctx.Done()
	return tx.Rollback(context.Background())
}

// rrScanner runs REPEATABLE READ transactions scanning the job table, each
// holding its snapshot for ten seconds, until ctx ends.
func rrScanner(ctx context.Context, base, schema string) error {
	c, err := sideConnect(ctx, base)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	for ctx.Err() == nil {
		tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return fmt.Errorf("repeatable read scanner: %w", err)
		}
		end := time.Now().Add(10 * time.Second)
		for time.Now().Before(end) && ctx.Err() == nil {
			var n int64
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "job"}.Sanitize()).Scan(&n); err != nil {
				break
			}
			sleepCtx(ctx, 2*time.Second)
		}
		_ = tx.Rollback(context.Background())
	}
	return nil
}

// waitEvents samples pg_stat_activity's wait events of the run's active
// sessions.
func waitEvents(ctx context.Context, c *pgx.Conn) (map[string]int, error) {
	rows, err := c.Query(ctx, `SELECT coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, '-'), count(*)
		FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
		GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("wait events: %w", err)
	}
	m := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return nil, fmt.Errorf("wait events: %w", err)
		}
		m[k] += n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("wait events: %w", err)
	}
	return m, nil
}
