package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backwave/backwave/internal/privatedb"
)

// sideUser is the MariaDB user of the coordinator's own fault
// connections, which KILL CONNECTION spares; the workload connects as
// root.
const sideUser = "torture_side"

// startPrivateMariaDB creates and starts the run's private MariaDB server
// in dir (inside the work directory within), on 127.0.0.1 at port and its
// own socket only: every MariaDB fault of a run — restarts, crashes,
// killed connections, held connections, long transactions — is aimed at
// it and at nothing else. Run as root it runs as the mysql OS user,
// otherwise as the caller. The redo log is written at each commit but not
// flushed (innodb_flush_log_at_trx_commit=2) to spare the shared disk: a
// crash kills the server process, not the host, so the page cache keeps
// every committed write, as with PostgreSQL's fsync=off here. The binary
// log is off (no replica reads it).
func startPrivateMariaDB(ctx context.Context, dir, within string, port int) (*privatedb.MariaDB, error) {
	m, err := privatedb.StartMariaDB(ctx, privatedb.MariaDBConfig{
		Dir: dir, Within: within, Port: port,
		Settings: map[string]string{
			"max-connections":                "420",
			"innodb-buffer-pool-size":        "128M",
			"innodb-flush-log-at-trx-commit": "2",
			"skip-log-bin":                   "",
			"log-warnings":                   "1",
		},
	})
	if err != nil {
		return nil, err // it names the private MariaDB already
	}
	return m, nil
}

// setupMariaDB starts the private server, makes the side user and sets
// the run's URI: root on database test, the run's table prefix.
func (c *coordinator) setupMariaDB(ctx context.Context) error {
	c.schema = fmt.Sprintf("torture_%d_", c.o.seed%1_000_000)
	var err error
	if c.o.target == targetGalera {
		if c.galera, err = startPrivateGalera(ctx, filepath.Join(c.dir, "galera"), c.dir, c.o.mdbPort); err != nil {
			return err
		}
		c.mdb = c.galera.Nodes()[0]
	} else if c.mdb, err = startPrivateMariaDB(ctx, filepath.Join(c.dir, "mdb"), c.dir, c.o.mdbPort); err != nil {
		return err
	}
	db, err := sql.Open("mysql", c.mdb.DSN("test"))
	if err != nil {
		return fmt.Errorf("private MariaDB: %w", err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE USER IF NOT EXISTS '" + sideUser + "'@'127.0.0.1'",
		"GRANT ALL ON *.* TO '" + sideUser + "'@'127.0.0.1'",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("private MariaDB: side user: %w", err)
		}
	}
	cfg, err := mysql.ParseDSN(c.mdb.DSN("test"))
	if err != nil {
		return fmt.Errorf("private MariaDB: %w", err)
	}
	cfg.User = sideUser
	c.mdbDSN = cfg.FormatDSN()
	c.uri = c.mdb.URL("test") + "?schema=" + c.schema
	if c.galera != nil {
		c.logf("private Galera cluster of %d nodes on 127.0.0.1:%d–%d, run as the %s OS user", galeraNodes, c.o.mdbPort, c.o.mdbPort+galeraNodes-1, c.mdb.Account().Name)
	} else {
		c.logf("private MariaDB server on 127.0.0.1:%d, run as the %s OS user", c.o.mdbPort, c.mdb.Account().Name)
	}
	return nil
}

// stopMariaDB stops the private MariaDB server, if the run started one.
func (c *coordinator) stopMariaDB() {
	if c.mdb == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c.galera != nil {
		c.nodeMu.Lock()
		defer c.nodeMu.Unlock()
		if err := c.galera.Stop(ctx); err != nil {
			c.logf("stop the private Galera cluster: %v", err)
		}
		return
	}
	if err := c.mdb.Stop(ctx, privatedb.Fast); err != nil {
		c.logf("stop the private MariaDB server: %v", err)
	}
}

// restartServer restarts the run's private server: cleanly for a
// postgres_restart or mariadb_restart, as a crash (pg_ctl -m immediate,
// SIGKILL of mariadbd) for a crash_recovery.
func (c *coordinator) restartServer(ctx context.Context, kind string) {
	mode := privatedb.Fast
	if kind == faultCrash {
		mode = privatedb.Immediate
	}
	from := time.Now()
	var err error
	var how string
	switch {
	case c.mdb != nil:
		how = map[privatedb.ShutdownMode]string{privatedb.Fast: "SIGTERM", privatedb.Immediate: "SIGKILL"}[mode] + " of mariadbd, then a new one"
		err = c.mdb.Restart(ctx, mode)
	case c.cluster != nil:
		how = fmt.Sprintf("pg_ctl restart -m %s", mode)
		err = c.cluster.Restart(ctx, mode)
	default:
		c.logf("%s skipped: no private server to restart", kind)
		return
	}
	c.fault(kind, from, fmt.Sprintf("%s (%v)", how, errOrNil(err)))
	c.logf("%s took %s (%v)", kind, time.Since(from).Round(time.Millisecond), errOrNil(err))
}

// mariaKill ends n random connections of the workload (root's, not the
// side user's) with KILL CONNECTION, returning how many it ended.
func mariaKill(ctx context.Context, dsn string, n int) (int, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return 0, fmt.Errorf("side connection: %w", err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id FROM information_schema.processlist
		WHERE user = 'root' AND command <> 'Daemon' ORDER BY RAND() LIMIT ?`, n)
	if err != nil {
		return 0, fmt.Errorf("processlist: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return 0, fmt.Errorf("processlist: %w", err)
		}
		ids = append(ids, id)
	}
	_ = rows.Close()
	k := 0
	for _, id := range ids {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err == nil {
			k++ // a connection may have gone by itself meanwhile
		}
	}
	return k, nil
}

// mariaHold opens n idle connections and holds them until ctx ends,
// returning how many it opened.
func mariaHold(ctx context.Context, dsn string, n int) (int, error) {
	var (
		mu    sync.Mutex
		conns []*sql.Conn
		dbs   []*sql.DB
	)
	var wg sync.WaitGroup
	slots := make(chan struct{}, 16)
	for range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			db, err := sql.Open("mysql", dsn)
			if err != nil {
				return
			}
			c, err := db.Conn(ctx)
			if err != nil {
				_ = db.Close()
				return // the server may refuse some: that is the pressure
			}
			mu.Lock()
			conns, dbs = append(conns, c), append(dbs, db)
			mu.Unlock()
		})
	}
	wg.Wait()
	<-ctx.Done()
	for i, c := range conns {
		_ = c.Close()
		_ = dbs[i].Close()
	}
	return len(conns), nil
}

// mariaIdleInTx opens a transaction with a consistent snapshot, reads the
// job table through it (so InnoDB keeps every row version since, as an
// xmin horizon does in PostgreSQL) and sits idle in it until ctx ends. It
// takes no lock: a transaction idle on the writer row is kill_in_tx's.
func mariaIdleInTx(ctx context.Context, dsn, prefix string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return fmt.Errorf("idle in transaction: %w", err)
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("idle in transaction: %w", err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		return fmt.Errorf("idle in transaction: %w", err)
	}
	var n int64
	if err := c.QueryRowContext(ctx, "SELECT count(*) FROM `"+prefix+"job`").Scan(&n); err != nil {
		return fmt.Errorf("idle in transaction: %w", err)
	}
	<-ctx.Done()
	_, err = c.ExecContext(context.Background(), "ROLLBACK")
	return err
}

// mariaRRScanner runs REPEATABLE READ transactions scanning the job
// table, each holding its snapshot for ten seconds, until ctx ends.
func mariaRRScanner(ctx context.Context, dsn, prefix string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return fmt.Errorf("repeatable read scanner: %w", err)
	}
	defer db.Close()
	for ctx.Err() == nil {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
		if err != nil {
			if !sleepCtx(ctx, time.Second) {
				return nil
			}
			continue // the server may be restarting
		}
		end := time.Now().Add(10 * time.Second)
		for time.Now().Before(end) && ctx.Err() == nil {
			var n int64
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM `"+prefix+"job`").Scan(&n); err != nil {
				break
			}
			sleepCtx(ctx, 2*time.Second)
		}
		_ = tx.Rollback()
	}
	return nil
}
