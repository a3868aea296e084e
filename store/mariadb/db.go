package mariadb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backwave/backwave/store"
)

// ParseDSN turns a go-sql-driver/mysql DSN or a mariadb:// or mysql:// URI
// (mariadb://user:password@host:port/database?param=value) into the
// driver's configuration. The store's own parameters (schema, migrate,
// history) are not DSN parameters: ParseURI takes them off a URI first.
func ParseDSN(dsn string) (*mysql.Config, error) {
	if strings.HasPrefix(dsn, "mariadb://") || strings.HasPrefix(dsn, "mysql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, fmt.Errorf("mariadb: %w: URI: %v", store.ErrInvalidParams, err)
		}
		cfg, _, err := configFromURL(u)
		return cfg, err
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w: DSN: %v", store.ErrInvalidParams, err)
	}
	return tune(cfg), nil
}

// configFromURL builds the driver's configuration from a mariadb:// or
// mysql:// URL, returning the query parameters the driver did not take.
func configFromURL(u *url.URL) (*mysql.Config, url.Values, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("mariadb: %w: URI %q: %s", store.ErrInvalidParams, u.Redacted(), fmt.Sprintf(format, args...))
	}
	cfg := mysql.NewConfig()
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	host := u.Host
	if host == "" {
		return nil, nil, bad("no host")
	}
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "3306")
	}
	cfg.Net, cfg.Addr = "tcp", host
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if cfg.DBName == "" || strings.Contains(cfg.DBName, "/") {
		return nil, nil, bad("the path must name one database, e.g. /test")
	}
	rest := url.Values{}
	for key, vals := range u.Query() {
		if len(vals) != 1 {
			return nil, nil, bad("%s given %d times", key, len(vals))
		}
		switch key {
		case "tls":
			cfg.TLSConfig = vals[0]
		case "timeout":
			d, err := time.ParseDuration(vals[0])
			if err != nil || d <= 0 {
				return nil, nil, bad("timeout=%q is not a positive duration", vals[0])
			}
			cfg.Timeout = d
		default:
			rest[key] = vals
		}
	}
	return tune(cfg), rest, nil
}

// tune sets what the store relies on: times and the clock in UTC, and
// multi-row batches within one packet.
func tune(cfg *mysql.Config) *mysql.Config {
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.ParseTime = false
	cfg.InterpolateParams = true
	return cfg
}

var versionRE = regexp.MustCompile(`^(\d+)\.(\d+)`)

// checkServer reads the server's version and refuses one without FOR
// UPDATE SKIP LOCKED.
func checkServer(ctx context.Context, db *sql.DB) (Database, error) {
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return Database{}, fmt.Errorf("mariadb: open: %w", err)
	}
	return parseServer(version)
}

// parseServer reads a server's VERSION() and refuses one without FOR
// UPDATE SKIP LOCKED.
func parseServer(version string) (Database, error) {
	v := Database{Version: version}
	v.MariaDB = strings.Contains(strings.ToLower(version), "mariadb")
	// MariaDB before 11 may report itself behind the replication-era
	// prefix "5.5.5-".
	m := versionRE.FindStringSubmatch(strings.TrimPrefix(version, "5.5.5-"))
	if m == nil {
		return v, fmt.Errorf("mariadb: open: cannot read server version %q", v.Version)
	}
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if err := v.supported(); err != nil {
		return v, err
	}
	return v, nil
}

// supported refuses a server without FOR UPDATE SKIP LOCKED.
func (v Database) supported() error {
	switch {
	case v.MariaDB && (v.Major < 10 || v.Major == 10 && v.Minor < 6):
		return fmt.Errorf("%w: %s has no FOR UPDATE SKIP LOCKED; BackWave needs MariaDB 10.6 or later", ErrServerTooOld, v)
	case !v.MariaDB && v.Major < 8:
		return fmt.Errorf("%w: %s has no FOR UPDATE SKIP LOCKED; BackWave needs MySQL 8.0 or later", ErrServerTooOld, v)
	}
	return nil
}

// renamer renames the literal prefix backwave_ in statements to the Schema
// Name, caching each result.
type renamer struct {
	prefix string
	cache  *sync.Map
}

func newRenamer(prefix string) renamer { return renamer{prefix: prefix, cache: &sync.Map{}} }

func (r renamer) of(q string) string {
	if r.prefix == DefaultSchema {
		return q
	}
	if v, ok := r.cache.Load(q); ok {
		return v.(string)
	}
	out := strings.ReplaceAll(q, DefaultSchema, r.prefix)
	r.cache.Store(q, out)
	return out
}

// querier is what a statement runs on: a *sql.Tx or a *sql.DB.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// wtx is one writing transaction; tx renames every statement to the
// Schema Name: it holds the writer row from its first
// statement to its commit (see the package doc, Commit order).
type wtx struct {
	s   *Store
	ctx context.Context
	tx  querier
	now time.Time
	// seq is the last Transition Log sequence number allocated; seq0 what
	// the writer row held when the transaction locked it.
	seq, seq0 int64
	// jobSeq is the last job id allocated; jobSeq0 what the row held.
	jobSeq, jobSeq0 int64
	// occSeq and workflowSeq number occurrence records and Workflows.
	occSeq, occSeq0, wfSeq, wfSeq0 int64
	// counts are the Monitor's count deltas, by Queue and state code;
	// running the Queues' Running count deltas. finish writes both.
	counts  map[countKey]int64
	running map[string]int
	// keyCounts are the key counts' deltas (keyed jobs only).
	keyCounts map[keyCountKey]int64
	// hinted are Queues whose jobs may have become claimable.
	hinted []string
	// settle holds the terminal parents whose dependents wait to be
	// counted (dependency.go).
	settleQueue []int64
	settling    bool
}

type countKey struct {
	queue string
	state int64
}

func (w *wtx) exec(q string, args ...any) (sql.Result, error) {
	return w.tx.ExecContext(w.ctx, q, args...)
}

func (w *wtx) query(q string, args ...any) (*sql.Rows, error) {
	return w.tx.QueryContext(w.ctx, q, args...)
}

func (w *wtx) row(q string, args ...any) *sql.Row {
	return w.tx.QueryRowContext(w.ctx, q, args...)
}

// hint records that q may have claimable jobs once the transaction commits.
func (w *wtx) hint(q string) {
	for _, h := range w.hinted {
		if h == q {
			return
		}
	}
	w.hinted = append(w.hinted, q)
}

// ready fails a call made after Close or with a done context.
func (s *Store) ready(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("mariadb: %w", store.ErrClosed)
	}
	return ctx.Err()
}

// lockWriter locks the writer row in tx and reads the store's now with it.
func (s *Store) lockWriter(ctx context.Context, tx querier) (*wtx, error) {
	w := &wtx{s: s, ctx: ctx, tx: tx, counts: map[countKey]int64{}, running: map[string]int{}, keyCounts: map[keyCountKey]int64{}}
	var serverNow int64
	err := tx.QueryRowContext(ctx, (`SELECT seq, job_seq, occ_seq, workflow_seq, `+serverNowSQL+` FROM backwave_writer WHERE id = 1 FOR UPDATE`)).
		Scan(&w.seq0, &w.jobSeq0, &w.occSeq0, &w.wfSeq0, &serverNow)
	if err != nil {
		return nil, fmt.Errorf("lock the writer row: %w", err)
	}
	w.seq, w.jobSeq, w.occSeq, w.wfSeq = w.seq0, w.jobSeq0, w.occSeq0, w.wfSeq0
	w.jobSeq = max(w.jobSeq, s.jobFloor.Load())
	w.now = fromMicros(serverNow)
	if s.opts.Now != nil {
		w.now = s.opts.Now().UTC().Truncate(time.Microsecond)
	}
	return w, nil
}

// finish writes what the transaction accumulated: the Queues' Running
// counts, the Monitor's counts and the writer row's sequences.
func (w *wtx) finish() error {
	for q, d := range w.running {
		if d == 0 {
			continue
		}
		if _, err := w.exec(`UPDATE backwave_queue SET running = running + ? WHERE name = ?`, d, q); err != nil {
			return fmt.Errorf("queue %q: count running: %w", q, err)
		}
	}
	for k, d := range w.counts {
		if d == 0 {
			continue
		}
		if _, err := w.exec(`INSERT INTO backwave_job_count (queue, state, n) VALUES (?, ?, ?)
			ON DUPLICATE KEY UPDATE n = n + ?`, k.queue, k.state, d, d); err != nil {
			return fmt.Errorf("count jobs: %w", err)
		}
	}
	if err := w.flushKeyCounts(); err != nil {
		return err
	}
	if w.seq != w.seq0 || w.jobSeq != w.jobSeq0 || w.occSeq != w.occSeq0 || w.wfSeq != w.wfSeq0 {
		if _, err := w.exec(`UPDATE backwave_writer SET seq = ?, job_seq = ?, occ_seq = ?, workflow_seq = ? WHERE id = 1`,
			w.seq, w.jobSeq, w.occSeq, w.wfSeq); err != nil {
			return fmt.Errorf("advance the writer sequence: %w", err)
		}
	}
	return nil
}

// write runs fn in one writing transaction and commits it, retrying a
// deadlock or lock-wait timeout a few times. After the commit it announces
// the Queues fn hinted.
func (s *Store) write(ctx context.Context, what string, fn func(w *wtx) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	var hinted []string
	for try := 0; ; try++ {
		err := s.writeOnce(ctx, fn, &hinted)
		if err == nil {
			break
		}
		if try < 5 && retryable(err) {
			continue
		}
		return s.fail(what, err)
	}
	if len(hinted) > 0 && s.hints.Active() {
		s.hints.Announce(hinted)
	}
	return nil
}

func (s *Store) writeOnce(ctx context.Context, fn func(w *wtx) error, hinted *[]string) error {
	conn, tx, err := s.begin(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	defer conn.Close()
	w, err := s.lockWriter(ctx, renamed{tx, s.sql})
	if err == nil {
		err = fn(w)
	}
	if err == nil {
		err = w.finish()
	}
	if err != nil {
		if rerr := tx.Rollback(); rerr != nil {
			discard(conn)
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	*hinted = w.hinted
	return nil
}

// read runs fn in one read-only transaction at REPEATABLE READ, so every
// query in it sees one snapshot. now is the store's clock.
func (s *Store) read(ctx context.Context, what string, fn func(q querier, now time.Time) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	conn, tx, err := s.begin(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return s.fail(what, err)
	}
	defer conn.Close()
	defer func() {
		if err := tx.Rollback(); err != nil {
			discard(conn)
		}
	}()
	now, err := s.now(ctx, tx)
	if err != nil {
		return s.fail(what, err)
	}
	if err := fn(renamed{tx, s.sql}, now); err != nil {
		return s.fail(what, err)
	}
	return nil
}

// now reads the store's clock.
func (s *Store) now(ctx context.Context, q querier) (time.Time, error) {
	if s.opts.Now != nil {
		return s.opts.Now().UTC().Truncate(time.Microsecond), nil
	}
	var us int64
	if err := q.QueryRowContext(ctx, `SELECT `+serverNowSQL).Scan(&us); err != nil {
		return time.Time{}, fmt.Errorf("read the server's clock: %w", err)
	}
	return fromMicros(us), nil
}

// renamed is a querier that renames every statement to the Schema Name.
type renamed struct {
	q  querier
	rn renamer
}

func (r renamed) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return r.q.ExecContext(ctx, r.rn.of(q), args...)
}

func (r renamed) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return r.q.QueryContext(ctx, r.rn.of(q), args...)
}

func (r renamed) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return r.q.QueryRowContext(ctx, r.rn.of(q), args...)
}

// retryable reports a deadlock (1213) or lock-wait timeout (1205): the
// transaction rolled back and may run again; or a transaction that could
// not begin (errBegin), whose connection begin threw away.
func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.Is(err, errBegin) || errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// errBegin marks a transaction that could not begin.
var errBegin = errors.New("begin")

// begin starts a transaction on a connection of its own. If it cannot —
// the connection may be one the server still holds inside an earlier
// transaction (a Galera node not yet ready refuses the rollback, and the
// pool takes the connection back: every later BeginTx on it fails with
// 1568) — the connection is thrown away, not returned to the pool. The
// caller closes conn after the transaction ends, and throws it away too
// (discard) if the rollback fails.
func (s *Store) begin(ctx context.Context, opts *sql.TxOptions) (*sql.Conn, *sql.Tx, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	tx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		discard(conn)
		return nil, nil, fmt.Errorf("%w: %w", errBegin, err)
	}
	return conn, tx, nil
}

// discard closes conn's connection instead of returning it to the pool.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// fail wraps an error of a call, turning the driver's "closed" into
// store.ErrClosed.
func (s *Store) fail(what string, err error) error {
	if errors.Is(err, sql.ErrConnDone) || (s.closed.Load() && strings.Contains(err.Error(), "database is closed")) {
		return fmt.Errorf("mariadb: %s: %w", what, store.ErrClosed)
	}
	return fmt.Errorf("mariadb: %s: %w", what, err)
}
