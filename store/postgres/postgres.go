package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave/store"
)

// DefaultSchema is the Schema Name a Store uses when Options.Schema is empty.
// Every statement is written against it.
const DefaultSchema = "backwave"

// Options configure a Store.
type Options struct {
	// Schema is the Schema Name: the PostgreSQL schema holding every table
	// of the store. Empty means DefaultSchema. It must be a lower-case
	// identifier (letters, digits and underscores, starting with a letter
	// or underscore, at most 63 bytes, not starting with "pg_"). Choose it
	// before the first migration and never change it in place; two stores
	// with different schemas in one database share nothing.
	Schema string

	// SkipMigrate makes Open check the schema version instead of applying
	// pending migrations: a store that finds its schema missing or older
	// than this build fails to open. Use it when migrations run as a
	// separate deploy step (Migrate) or the runtime role may not change the
	// schema.
	SkipMigrate bool

	// NoMigrationLock turns off Coordinated Migration: Migrate then takes no
	// advisory lock. Only for deployments that serialize migration
	// themselves (a single-runner deploy step).
	NoMigrationLock bool

	// DisableListener turns off the Wake-Up Hint listener: SubscribeHints
	// then never calls its subscribers and workers rely on polling alone.
	DisableListener bool

	// DisableNotify stops the store from sending NOTIFY on writes that make
	// jobs claimable. Listeners of other stores then hear nothing from this
	// one.
	DisableNotify bool

	// Pooler says the store is behind a connection pooler: PoolerTransaction
	// (URI parameter pooler=transaction) for one in transaction pooling
	// mode, such as PgBouncer's pool_mode = transaction; empty for a direct
	// connection or a session pooler. See PoolerTransaction for what
	// changes.
	Pooler string

	// ListenURL is a connection string for the Wake-Up Hint listener alone
	// (URI parameter listen=, URL-escaped): behind a transaction pooler it
	// must name the PostgreSQL server directly, since LISTEN does not
	// survive the pooler handing the server connection to another client;
	// Open checks that a connection to it hears a NOTIFY sent through the
	// store's connections. Empty means the store's own connection settings,
	// or, behind a transaction pooler, no listener: workers poll, and Open
	// logs so once.
	ListenURL string

	// ListenerReconnectDelay is how long the hint listener waits before
	// reconnecting after its connection fails; 0 means one second.
	ListenerReconnectDelay time.Duration

	// Now, if set, overrides the store's clock: every statement is given
	// this time instead of reading the database server's now(). It exists
	// so tests (the Conformance Suite) can move time without sleeping; in
	// production leave it nil, so that every node shares the server's
	// clock.
	Now func() time.Time

	// Logger receives the listener's connection errors; nil discards them.
	Logger *slog.Logger

	// History is the Job History Policy; the zero value records every
	// Transition Log entry with its Failure Detail. store.HistoryOff skips
	// the log writes altogether (the statements' logging steps insert no
	// row).
	History store.HistoryPolicy
}

// Store is the Networked Adapter: the Storage Contract on PostgreSQL. It
// implements store.Store and store.HintSource and is safe for concurrent use
// by any number of goroutines, processes and hosts sharing the database.
type Store struct {
	db     database
	schema string
	opts   Options
	log    *slog.Logger
	closed atomic.Bool

	renamed sync.Map // statement as written → statement for schema

	hints hub

	// listenCfg is the hint listener's connection config when
	// Options.ListenURL names one.
	listenCfg *pgx.ConnConfig

	// ident is the store's database, read at the first Transactional
	// Enqueue (tx.go).
	ident atomic.Pointer[dbIdentity]
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.HintSource = (*Store)(nil)
	_ store.TxInserter = (*Store)(nil)
)

// Open connects a pgx pool to the database connString names (a URL such as
// "postgres://user@host:5432/db?sslmode=disable" or a key=value DSN), pings
// it, migrates the schema (unless opts.SkipMigrate) and checks that the
// schema version and privileges fit this build. The Store owns the pool:
// Close closes it.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	schema, err := checkSchema(opts.Schema)
	if err != nil {
		return nil, err
	}
	cfg, opts, err := parsePoolConfig(connString, opts)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: create pool: %w", err)
	}
	s, err := open(ctx, newPoolDB(pool, true), schema, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// OpenPool is Open on the caller's pgx pool, which the Store does not close.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	schema, err := checkSchema(opts.Schema)
	if err != nil {
		return nil, err
	}
	return open(ctx, newPoolDB(pool, false), schema, opts)
}

// OpenDB is Open for database/sql users: the Store runs every statement on
// db, which must use pgx's stdlib driver (import
// github.com/jackc/pgx/v5/stdlib and open with driver name "pgx", or use
// stdlib.OpenDB). The Store does not close db.
func OpenDB(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	schema, err := checkSchema(opts.Schema)
	if err != nil {
		return nil, err
	}
	d := newSQLDB(db, false)
	if err := d.checkDriver(ctx); err != nil {
		return nil, err
	}
	return open(ctx, d, schema, opts)
}

func open(ctx context.Context, db database, schema string, opts Options) (*Store, error) {
	if err := opts.History.Validate(); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{db: db, schema: schema, opts: opts, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.hints.s = s
	if err := db.ping(ctx); err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	own, _ := db.connConfig(ctx)
	lc, err := checkPooler(opts, own)
	if err != nil {
		return nil, err
	}
	if opts.Pooler == PoolerTransaction {
		if err := db.checkTypes(ctx); err != nil {
			return nil, err
		}
	}
	s.listenCfg = lc
	if lc != nil {
		if err := s.probeListener(ctx); err != nil {
			return nil, err
		}
	} else if opts.Pooler == PoolerTransaction && !opts.DisableListener {
		s.log.Warn("backwave: behind a transaction pooler with no listen= URL naming the server directly: no Wake-Up Hints, workers find new jobs by polling", "schema", schema)
	}
	if !opts.SkipMigrate {
		if _, err := s.Migrate(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.checkVersion(ctx); err != nil {
		return nil, err
	}
	if err := s.checkPrivileges(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// parsePoolConfig parses connString for a pgx pool, taking its pooler=
// and listen= parameters into opts; behind a transaction pooler the pool's
// connections run statements in QueryExecModeExec unless the URL chose
// another mode that needs no named prepared statement.
func parsePoolConfig(connString string, opts Options) (*pgxpool.Config, Options, error) {
	rest, opts, err := splitPoolerParams(connString, opts)
	if err != nil {
		return nil, opts, err
	}
	cfg, err := pgxpool.ParseConfig(rest)
	if err != nil {
		return nil, opts, fmt.Errorf("postgres: parse connection string: %w", err)
	}
	if opts.Pooler == PoolerTransaction {
		if !strings.Contains(rest, "default_query_exec_mode") {
			cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
		}
		cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
			RegisterTypes(c.TypeMap())
			return nil
		}
	}
	return cfg, opts, nil
}

// Schema returns the store's Schema Name.
func (s *Store) Schema() string { return s.schema }

// Close stops the hint listener and releases the store's connections (the
// pool Open made; a caller's pool or DB stays open). Every later call, Close
// included, fails with store.ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return fmt.Errorf("postgres: %w", store.ErrClosed)
	}
	s.hints.stop()
	s.db.close()
	return nil
}

// enter fails a call on a closed store or a done context.
func (s *Store) enter(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("postgres: %w", store.ErrClosed)
	}
	return ctx.Err()
}

// wrap adds the operation's name to a database error, reporting a store
// closed meanwhile as store.ErrClosed.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if s.closed.Load() && !errors.Is(err, store.ErrClosed) {
		return fmt.Errorf("postgres: %s: %w (%w)", op, store.ErrClosed, err)
	}
	return fmt.Errorf("postgres: %s: %w%s", op, err, s.poolerHint(err))
}

// nowArg is the clock parameter every statement takes as
// coalesce($1::timestamptz, now()): nil means the server's clock.
func (s *Store) nowArg() any {
	if s.opts.Now == nil {
		return nil
	}
	return s.opts.Now()
}

// schemaWord matches the literal schema every statement is written against.
var schemaWord = regexp.MustCompile(`\bbackwave\b`)

// schemaName is what a Schema Name may be: a lower-case identifier that
// needs no quoting anywhere it appears (table names, string literals,
// the NOTIFY channel).
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// sql is the one choke point that renames the schema: it returns query with
// every whole word "backwave" replaced by the store's Schema Name. With the
// default schema it returns query unchanged, byte for byte.
func (s *Store) sql(query string) string {
	if s.schema == DefaultSchema {
		return query
	}
	if r, ok := s.renamed.Load(query); ok {
		return r.(string)
	}
	r := schemaWord.ReplaceAllLiteralString(query, s.schema)
	s.renamed.Store(query, r)
	return r
}

// checkSchema validates a Schema Name, defaulting the empty one.
func checkSchema(name string) (string, error) {
	if name == "" {
		return DefaultSchema, nil
	}
	if !schemaName.MatchString(name) {
		return "", fmt.Errorf("postgres: %w: schema name %s: want a lower-case identifier of letters, digits and underscores, at most 63 bytes, not starting with a digit",
			store.ErrInvalidParams, store.Echo(name))
	}
	if err := store.CheckSchemaName(name); err != nil {
		return "", fmt.Errorf("postgres: %w", err)
	}
	return name, nil
}
