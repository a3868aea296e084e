package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/backwave/backwave/store"
)

// PoolerTransaction is Options.Pooler (URI parameter pooler=transaction) for
// a store behind a connection pooler in transaction pooling mode — PgBouncer
// with pool_mode = transaction, Supabase's and Heroku's poolers — where a
// server connection is the client's for one transaction only, so no session
// state may outlast a transaction. Such a store:
//
//   - runs every statement with pgx.QueryExecModeExec (unnamed statements,
//     parameters sent in binary) instead of named prepared statements, which
//     live in a server session the next transaction may not get;
//   - takes the Coordinated Migration lock as a transaction-level advisory
//     lock held by a transaction kept open, on a connection of its own, for
//     the whole migration, instead of a session advisory lock (which would be
//     taken on one server session and released, or not, on another);
//   - LISTENs for Wake-Up Hints on a direct connection to the server
//     (Options.ListenURL, URI parameter listen=) or, without one, sends none
//     and says so once at Open: workers find new jobs by polling.
//
// SET outside a transaction and temporary tables are not used by the store
// in any mode; its session-local settings are SET LOCAL or set_config(...,
// true), which end with their transaction.
const PoolerTransaction = "transaction"

// URI parameters Open, Migrate and the command line read and remove before
// the connection string reaches pgx (which would send them to the server as
// settings).
const (
	// poolerParam is Options.Pooler.
	poolerParam = "pooler"
	// listenParam is Options.ListenURL.
	listenParam = "listen"
)

// probeWait is how long Open waits for the listener's probe NOTIFY.
const probeWait = 3 * time.Second

// splitPoolerParams removes the pooler= and listen= parameters from a
// postgres:// URL into opts (where they must not contradict opts' own
// settings) and returns the rest. A key=value DSN may not carry them.
func splitPoolerParams(connString string, opts Options) (string, Options, error) {
	if !strings.HasPrefix(connString, "postgres://") && !strings.HasPrefix(connString, "postgresql://") {
		for _, f := range strings.Fields(connString) {
			if k, _, ok := strings.Cut(f, "="); ok && (k == poolerParam || k == listenParam) {
				return "", opts, fmt.Errorf("postgres: %w: connection string parameter %s= is read from postgres:// URLs only; use a URL or set Options.Pooler and Options.ListenURL",
					store.ErrInvalidParams, k)
			}
		}
		return connString, opts, nil
	}
	u, err := neturl.Parse(connString)
	if err != nil {
		return "", opts, fmt.Errorf("postgres: parse connection string: %w", err)
	}
	q := u.Query()
	if q.Has(poolerParam) {
		v := q.Get(poolerParam)
		if opts.Pooler != "" && opts.Pooler != v {
			return "", opts, fmt.Errorf("postgres: %w: the URL says pooler=%s, Options.Pooler %q", store.ErrInvalidParams, v, opts.Pooler)
		}
		opts.Pooler = v
		q.Del(poolerParam)
	}
	if q.Has(listenParam) {
		v := q.Get(listenParam)
		if opts.ListenURL != "" && opts.ListenURL != v {
			return "", opts, fmt.Errorf("postgres: %w: the URL's listen= and Options.ListenURL differ", store.ErrInvalidParams)
		}
		opts.ListenURL = v
		q.Del(listenParam)
	}
	u.RawQuery = q.Encode()
	return u.String(), opts, nil
}

// checkPooler validates Options.Pooler and Options.ListenURL against the
// connection config of the store's own connections (nil when the mode cannot
// tell), returning the listener's config (nil: the store's own).
func checkPooler(opts Options, own *pgx.ConnConfig) (*pgx.ConnConfig, error) {
	switch opts.Pooler {
	case "", PoolerTransaction:
	default:
		return nil, fmt.Errorf("postgres: %w: pooler=%q: want %q (a pooler in transaction pooling mode) or nothing (a direct connection or a session pooler)",
			store.ErrInvalidParams, opts.Pooler, PoolerTransaction)
	}
	if opts.Pooler == PoolerTransaction && own != nil {
		switch own.DefaultQueryExecMode {
		case pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe:
			return nil, fmt.Errorf("postgres: %w: behind a transaction pooler the connections' default_query_exec_mode must be exec, simple_protocol or describe_exec, not %s: its statements are prepared in a server session the next transaction may not get",
				store.ErrInvalidParams, own.DefaultQueryExecMode)
		}
	}
	if opts.ListenURL == "" {
		return nil, nil
	}
	if opts.DisableListener {
		return nil, fmt.Errorf("postgres: %w: listen= names a listener connection but Options.DisableListener turns the listener off", store.ErrInvalidParams)
	}
	lc, err := pgx.ParseConfig(opts.ListenURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w: listen= URL: %w", store.ErrInvalidParams, err)
	}
	if opts.Pooler == PoolerTransaction && own != nil && sameAddress(lc, own) {
		return nil, fmt.Errorf("postgres: %w: listen= names %s, the transaction pooler itself: LISTEN through it is lost when the server connection goes back to the pool; name the PostgreSQL server directly",
			store.ErrInvalidParams, address(lc))
	}
	return lc, nil
}

// address is a config's first host:port.
func address(c *pgx.ConnConfig) string {
	return net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
}

// sameAddress reports whether two configs dial the same host and port.
func sameAddress(a, b *pgx.ConnConfig) bool {
	return strings.EqualFold(a.Host, b.Host) && a.Port == b.Port
}

// probeListener checks, before anything is written, that a connection made
// with the listener's config hears a NOTIFY sent through the store's own
// connections: a listen= URL that goes through a transaction pooler, or to
// another server or database, does not.
func (s *Store) probeListener(ctx context.Context) error {
	cfg := s.listenCfg.Copy()
	cfg.OnNotification = nil
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres: connect to the listen= URL: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	channel := "backwave.probe." + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("postgres: LISTEN on the listen= URL: %w", err)
	}
	if _, err := s.db.exec(ctx, `SELECT pg_notify($1::text, 'probe')`, channel); err != nil {
		return s.wrap("probe the listener", err)
	}
	wctx, cancel := context.WithTimeout(ctx, probeWait)
	defer cancel()
	for {
		n, err := conn.WaitForNotification(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("postgres: %w: a connection to the listen= URL (%s) did not hear, within %v, a NOTIFY sent through the store's connections: it goes through a transaction pooler, or to another server or database; name the PostgreSQL server the store's database is on directly",
				store.ErrInvalidParams, address(cfg), probeWait)
		}
		if n.Channel == channel {
			return nil
		}
	}
}

// poolerHint is added to a database error that a transaction pooler in
// front of a store not told about it would cause: a named prepared
// statement that the server session does not have.
func (s *Store) poolerHint(err error) string {
	var pgErr *pgconn.PgError
	if s.opts.Pooler == PoolerTransaction || !errors.As(err, &pgErr) {
		return ""
	}
	if pgErr.Code == "26000" || pgErr.Code == "42P05" { // invalid_sql_statement_name, duplicate_prepared_statement
		return " (a prepared statement went missing or already existed in the server session: is the store behind a transaction pooler? Then add pooler=transaction to its URL)"
	}
	return ""
}

// lockMigrationTx takes the Coordinated Migration lock behind a transaction
// pooler: a transaction, kept open on a connection of its own until release
// is called, holds pg_advisory_xact_lock, which its end releases.
//
// CREATE INDEX CONCURRENTLY waits for the end of every transaction of the
// database that holds a snapshot older than its own, so neither side may
// keep one: each poll of a waiter is a transaction of its own, ended before
// the pause, and the holder, once it has the lock, runs a statement that
// needs no snapshot (SET LOCAL) so that the extended protocol's unnamed
// portal of the lock's SELECT, which keeps its snapshot until it is
// replaced, is dropped. Idle in its transaction, the holder then holds none.
func (s *Store) lockMigrationTx(ctx context.Context) (release func(), err error) {
	got := make(chan error, 1)
	done := make(chan struct{})
	finished := make(chan struct{})
	held := errors.New("migration lock held")
	go func() {
		defer close(finished)
		for pause := 5 * time.Millisecond; ; pause = min(2*pause, 250*time.Millisecond) {
			err := s.db.inTx(ctx, func(q querier) error {
				var ok bool
				err := q.query(ctx, s.sql(`SELECT pg_try_advisory_xact_lock(`+migrationLock+`)`), nil, func(scan scanFunc) error {
					return scan(&ok)
				})
				if err != nil {
					return fmt.Errorf("take the migration lock: %w", err)
				}
				if !ok {
					return nil
				}
				if _, err := q.exec(ctx, `SET LOCAL application_name = 'backwave-migrate'`); err != nil {
					return fmt.Errorf("hold the migration lock: %w", err)
				}
				got <- nil
				<-done
				return held
			})
			switch {
			case errors.Is(err, held):
				return // rolled back: the lock is released
			case err != nil:
				got <- err
				return
			}
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
				got <- fmt.Errorf("wait for the migration lock: %w", ctx.Err())
				return
			case <-t.C:
			}
		}
	}()
	if err := <-got; err != nil {
		<-finished
		return nil, err
	}
	return func() { close(done); <-finished }, nil
}

// RegisterTypes tells a connection's type map which PostgreSQL array types
// the store's own array arguments are (bigint[], int[], text[]). A
// connection that prepares its statements learns them from the server; one
// that does not — QueryExecModeExec or the simple protocol, as behind a
// transaction pooler — must be told. Open does it for the pools it makes;
// behind a transaction pooler, a pool given to OpenPool, or a DB to OpenDB,
// must call it from its AfterConnect hook:
//
//	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
//		postgres.RegisterTypes(c.TypeMap())
//		return nil
//	}
func RegisterTypes(m *pgtype.Map) {
	m.RegisterDefaultPgType(pgArray[int8Elem]{}, "_int8")
	m.RegisterDefaultPgType(pgArray[int4Elem]{}, "_int4")
	m.RegisterDefaultPgType(pgArray[textElem]{}, "_text")
}

// typesRegistered reports whether RegisterTypes was called on m.
func typesRegistered(m *pgtype.Map) bool {
	_, ok := m.TypeForValue(pgArray[int8Elem]{})
	return ok
}

// errTxTypesNotRegistered is checkTxTypes' error.
var errTxTypesNotRegistered = fmt.Errorf("postgres: %w: the caller's pgx.Tx is on a connection in exec or simple-protocol mode (as behind a transaction pooler) that does not know the store's array types: call postgres.RegisterTypes(conn.TypeMap()) in the AfterConnect hook of the application's pool",
	store.ErrInvalidParams)

// errTypesNotRegistered is checkTypes' error.
var errTypesNotRegistered = fmt.Errorf("postgres: %w: behind a transaction pooler the connections must know the store's array types: call postgres.RegisterTypes(conn.TypeMap()) in the pool's AfterConnect hook, or open the store with Open and pooler=transaction in its URL",
	store.ErrInvalidParams)
