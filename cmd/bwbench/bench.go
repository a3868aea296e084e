package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave/internal/privatedb"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver every system here uses
)

// noop is the job of every scenario: its one field carries the enqueue time
// (Unix nanoseconds) for the latency scenario, zero elsewhere. It is both a
// BackWave JobArgs and a River JobArgs.
type noop struct {
	T int64 `json:"t"`
}

// WireName is the BackWave Wire Name.
func (noop) WireName() string { return "bwbench_noop" }

// Kind is the River job kind.
func (noop) Kind() string { return "bwbench_noop" }

// instance is one system on fresh storage for one run.
type instance interface {
	// bulkInsert inserts n noop jobs through the system's best bulk path.
	bulkInsert(ctx context.Context, n int) error
	// start starts the workers; onWork is called at the start of each job
	// with its enqueue stamp.
	start(ctx context.Context, onWork func(stamp int64)) error
	// enqueue inserts one job carrying stamp, the way an application
	// enqueues a single job.
	enqueue(ctx context.Context, stamp int64) error
	// pending counts the jobs not yet finalized.
	pending(ctx context.Context) (int, error)
	// close stops the workers and drops the storage.
	close(ctx context.Context) error
}

// system is one contender.
type system interface {
	name() string
	// supports says whether the system has a row for the scenario.
	supports(scenario, target string) bool
	// open makes a fresh instance tuned for the scenario and returns the
	// settings it used, as printed with the row.
	open(ctx context.Context, b *bench, scenario, target string) (instance, string, error)
}

// bench holds what every run shares: the targets' connections, the temporary
// directory and a counter for unique storage names.
type bench struct {
	cfg     config
	log     *slog.Logger
	stderr  io.Writer
	pg      *pgxpool.Pool // admin pool: schemas, counts, settings
	dir     string
	ownDir  bool
	skipped map[string]string
	// redis is the Redis server's version and persistence settings, when
	// the redis target runs.
	redis   map[string]string
	seq     atomic.Int64
	systems []system
	// lag is the proxy of the lag scenarios, started at their first run;
	// via, while set, is its address, which pgURLWith connects through.
	lag *lagProxy
	via string
	// pooler is the postgres-pgbouncer target's private PgBouncer
	// (pgbouncer.go), and stopPooler ends it.
	pooler     *privatedb.PgBouncer
	stopPooler func()
	// maria is the mariadb target's admin pool (mariadb.go), mariaCfg
	// its parsed URL, mariaVersion the server's version.
	maria        *sql.DB
	mariaCfg     *mysql.Config
	mariaVersion string
}

func newBench(ctx context.Context, cfg config, log *slog.Logger, stderr io.Writer) (*bench, error) {
	b := &bench{cfg: cfg, log: log, stderr: stderr, skipped: map[string]string{}}
	for _, s := range cfg.systems {
		switch s {
		case sysBackWave:
			b.systems = append(b.systems, backwaveSystem{})
		case sysRiver:
			b.systems = append(b.systems, riverSystem{})
		case sysRaw:
			b.systems = append(b.systems, rawSystem{})
		case sysGraphile, sysPgBoss:
			if _, reason := b.peerRuntime(s); reason != "" {
				fmt.Fprintf(stderr, "bwbench: system %s skipped: %s\n", s, reason)
				continue
			}
			b.systems = append(b.systems, nodePeer{sys: s})
		case sysAsynq:
			b.systems = append(b.systems, asynqSystem{})
		}
	}
	for _, tg := range cfg.targets {
		switch tg {
		case tgPostgres, tgPgBouncer:
			if cfg.pgURL == "" {
				b.skipped[tg] = "no PostgreSQL URL (-postgres, $BWBENCH_POSTGRES_URL or $BACKWAVE_TEST_POSTGRES_URL)"
				continue
			}
			if tg == tgPgBouncer {
				pb, stop, err := startPgBouncer(ctx, cfg.pgURL)
				if err != nil {
					b.skipped[tg] = fmt.Sprintf("no private PgBouncer: %v", err)
					continue
				}
				b.pooler, b.stopPooler = pb, stop
			}
			if b.pg != nil {
				continue
			}
			pool, err := pgxpool.New(ctx, cfg.pgURL)
			if err != nil {
				return nil, fmt.Errorf("postgres: %w", err)
			}
			if err := pool.Ping(ctx); err != nil {
				pool.Close()
				return nil, fmt.Errorf("postgres: %w", err)
			}
			b.pg = pool
		case tgMariaDB:
			if err := b.openMaria(ctx); err != nil {
				b.skipped[tg] = err.Error()
			}
		case tgRedis:
			if !slices.Contains(cfg.systems, sysAsynq) {
				b.skipped[tg] = "no system on it selected (asynq is the only one)"
				continue
			}
			info, err := redisInfo(ctx, cfg.redisAddr)
			if err != nil {
				b.skipped[tg] = fmt.Sprintf("no Redis at %s (-redis, $BWBENCH_REDIS_ADDR): %v", cfg.redisAddr, err)
				continue
			}
			b.redis = info
		case tgSQLite:
			b.dir = cfg.sqliteDir
			if b.dir == "" {
				d, err := os.MkdirTemp("", "bwbench-")
				if err != nil {
					return nil, fmt.Errorf("sqlite: %w", err)
				}
				b.dir, b.ownDir = d, true
			}
		}
	}
	return b, nil
}

func (b *bench) close() {
	if b.lag != nil {
		b.lag.close()
	}
	if b.pg != nil {
		b.pg.Close()
	}
	if b.stopPooler != nil {
		b.stopPooler()
	}
	if b.maria != nil {
		_ = b.maria.Close()
	}
	if b.ownDir {
		_ = os.RemoveAll(b.dir)
	}
}

func (b *bench) hasTarget(tg string) bool { _, skip := b.skipped[tg]; return !skip }

// newSchema creates a fresh PostgreSQL schema for one system's run; drop
// removes it with everything in it.
func (b *bench) newSchema(ctx context.Context, prefix string) (name string, drop func(), err error) {
	name = fmt.Sprintf("bwbench_%s_%d_%d", prefix, os.Getpid(), b.seq.Add(1))
	if _, err := b.pg.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", nil, fmt.Errorf("create schema %s: %w", name, err)
	}
	return name, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, err := b.pg.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			b.log.Warn("drop schema", "schema", name, "error", err)
		}
	}, nil
}

// newFile names a fresh SQLite file for one system's run; remove deletes it
// and its WAL.
func (b *bench) newFile(prefix string) (path string, remove func()) {
	path = filepath.Join(b.dir, fmt.Sprintf("%s-%d.db", prefix, b.seq.Add(1)))
	return path, func() {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			_ = os.Remove(path + suffix)
		}
	}
}

// sqliteDSN is the DSN every system's SQLite connections use: WAL, the
// chosen synchronous setting, a busy timeout.
func (b *bench) sqliteDSN(path string, immediate bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+strings.ToUpper(b.cfg.sqliteSync)+")")
	if immediate {
		q.Set("_txlock", "immediate")
	}
	return path + "?" + q.Encode()
}

// openSQLiteReader opens a read connection for counting.
func (b *bench) openSQLiteReader(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", b.sqliteDSN(path, false))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// appName is the application_name of a system's PostgreSQL connections,
// by which -cpu finds their server backends.
func appName(system string) string { return "bwbench_" + system }

// pgURLWith returns the PostgreSQL URL with a pgx pool size and the
// system's application_name.
func (b *bench) pgURLWith(tg, sc string, conns int, system string) (string, error) {
	u, err := url.Parse(b.cfg.pgURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		if tg == tgPgBouncer {
			return "", fmt.Errorf("the %s target needs -postgres as a postgres:// URL", tgPgBouncer)
		}
		// A key=value DSN.
		return b.cfg.pgURL + " pool_max_conns=" + strconv.Itoa(conns) + " application_name=" + appName(system), nil
	}
	if b.via != "" {
		u.Host = b.via
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(conns))
	q.Set("application_name", appName(system))
	u.RawQuery = q.Encode()
	if tg == tgPgBouncer {
		pooledURL(u, poolerAddr(b.pooler), system, sc != scLatencyOff)
	}
	return u.String(), nil
}

// countPG runs a count query on the admin pool.
func (b *bench) countPG(ctx context.Context, query string) (int, error) {
	var n int
	err := b.pg.QueryRow(ctx, query).Scan(&n)
	return n, err
}

// count runs a count query on reader, a system's own SQLite read
// connection, or on the admin pool when reader is nil (PostgreSQL).
func (b *bench) count(ctx context.Context, reader *sql.DB, query string) (int, error) {
	if reader == nil {
		return b.countPG(ctx, query)
	}
	var n int
	err := reader.QueryRowContext(ctx, query).Scan(&n)
	return n, err
}

// chunks calls fn with batch sizes adding up to n.
func chunks(n, batch int, fn func(k int) error) error {
	for left := n; left > 0; {
		k := min(left, batch)
		if err := fn(k); err != nil {
			return err
		}
		left -= k
	}
	return nil
}

// quietLogger logs a system's errors and warnings, never its chatter, to
// the bench's log.
func (b *bench) quietLogger(system string) *slog.Logger {
	return slog.New(slog.NewTextHandler(b.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("system", system)
}
