package mariadb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backwave/backwave/store"
)

// DefaultSchema is the Schema Name used when Options.Schema is empty: the
// prefix of every table the store uses.
const DefaultSchema = "backwave_"

// Options configure a Store. The zero value is a working configuration.
type Options struct {
	// Schema is the Schema Name: the prefix of every table the store uses
	// in the connection's database, DefaultSchema when empty. It must be an
	// identifier of lower-case letters, digits and underscores, not
	// starting with a digit, at most 40 bytes, and is fixed for the life of
	// the data.
	Schema string

	// Now, if set, overrides the store's clock (tests pin and move it).
	// Nil means the database server's clock, read inside each transaction.
	Now func() time.Time

	// ManualMigrate turns off the migration Open otherwise runs. Open then
	// refuses a database whose schema is behind this build
	// (ErrSchemaBehind); the deployment runs Migrate itself.
	ManualMigrate bool

	// History is the Job History Policy; the zero value records every
	// Transition Log entry with its Failure Detail.
	History store.HistoryPolicy
}

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

// ValidateSchema checks a Schema Name.
func ValidateSchema(schema string) error {
	if !schemaRE.MatchString(schema) {
		return fmt.Errorf("mariadb: %w: schema name %q is not lower-case letters, digits and underscores (not starting with a digit, at most 40 bytes)", store.ErrInvalidParams, schema)
	}
	return nil
}

func (o Options) withDefaults() (Options, error) {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if err := ValidateSchema(o.Schema); err != nil {
		return o, err
	}
	if err := o.History.Validate(); err != nil {
		return o, fmt.Errorf("mariadb: %w", err)
	}
	return o, nil
}

// Store is the MariaDB / MySQL Networked Adapter over one database. It
// implements store.Store, store.HintSource and store.TxInserter and is safe
// for concurrent use; any number of Stores, in any number of processes, may
// share the database. Create one with Open or OpenDB.
type Store struct {
	db     *sql.DB
	ownDB  bool
	opts   Options
	prefix string
	// sql caches each statement renamed to the Schema Name.
	sql    renamer
	server Database
	hints  store.HintHub
	closed atomic.Bool
	// jobFloor is the highest job id handed out inside a caller's
	// transaction: the writer row's job_seq rolls back with it, so every
	// writer starts its ids above the floor (job.ID: never reused).
	jobFloor store.IDFloor
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.HintSource = (*Store)(nil)
	_ store.TxInserter = (*Store)(nil)
)

// ErrSchemaBehind is returned by Open with Options.ManualMigrate when the
// database's schema is older than this build needs: Migrate brings it up.
var ErrSchemaBehind = errors.New("mariadb: schema is behind this version of BackWave")

// ErrServerTooOld is returned by Open for a server without FOR UPDATE SKIP
// LOCKED: MariaDB before 10.6, MySQL before 8.0.
var ErrServerTooOld = errors.New("mariadb: server too old")

// Open connects to the database named by dsn — a go-sql-driver/mysql DSN
// ("root@tcp(127.0.0.1:3306)/test") or a mariadb:// or mysql:// URI — and
// returns a Store over it, migrating first unless opts.ManualMigrate.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return openConfig(ctx, cfg, opts)
}

// sqlOpenDB opens the store's own pool on a connector.
func sqlOpenDB(c driver.Connector) *sql.DB {
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(8)
	return db
}

// OpenDB returns a Store over the application's own *sql.DB (opened with
// the "mysql" driver), which the store never closes. The DB's DSN must set
// parseTime=false (the default) and may set any other parameter; the store
// sets what it needs per transaction.
func OpenDB(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, fmt.Errorf("mariadb: %w: nil *sql.DB", store.ErrInvalidParams)
	}
	if _, ok := db.Driver().(*mysql.MySQLDriver); !ok {
		return nil, fmt.Errorf("mariadb: %w: the *sql.DB's driver is %T, not github.com/go-sql-driver/mysql", store.ErrInvalidParams, db.Driver())
	}
	return open(ctx, db, opts, false)
}

func open(ctx context.Context, db *sql.DB, opts Options, own bool) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, ownDB: own, opts: opts, prefix: opts.Schema, sql: newRenamer(opts.Schema)}
	if s.server, err = checkServer(ctx, db); err != nil {
		return nil, err
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("mariadb: open: %w", err)
	}
	latest := latestVersion()
	switch {
	case v > latest:
		if err := s.checkWindow(ctx, v, latest); err != nil {
			return nil, err
		}
	case v == latest:
	case opts.ManualMigrate && v == 0:
		return nil, fmt.Errorf("%w: schema %q has no BackWave tables", ErrSchemaBehind, opts.Schema)
	case opts.ManualMigrate:
		return nil, fmt.Errorf("%w: schema %q is at version %d, this build needs %d", ErrSchemaBehind, opts.Schema, v, latest)
	default:
		if _, err := s.Migrate(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Database describes the database server a Store runs on: its version and kind.
type Database struct {
	// Version is the server's version string (SELECT VERSION()).
	Version string
	// MariaDB is true for MariaDB, false for MySQL.
	MariaDB bool
	// Major, Minor are the version's first two numbers.
	Major, Minor int
}

// String names the server.
func (v Database) String() string {
	if v.MariaDB {
		return "MariaDB " + v.Version
	}
	return "MySQL " + v.Version
}

// Database returns what the store knows of its database server.
func (s *Store) Database() Database { return s.server }

// Schema returns the store's Schema Name (its table prefix).
func (s *Store) Schema() string { return s.prefix }

// DB returns the *sql.DB the store runs on.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the store's connections (a *sql.DB given to OpenDB stays
// open). Every later call, Close included, fails with store.ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return fmt.Errorf("mariadb: %w", store.ErrClosed)
	}
	if s.ownDB {
		return s.db.Close()
	}
	return nil
}

// SubscribeHints registers fn for in-process Wake-Up Hints: this Store
// announces a Queue after its own commits make jobs claimable in it. MySQL
// and MariaDB have no LISTEN/NOTIFY, so other processes hear nothing and
// find the jobs at their next poll.
func (s *Store) SubscribeHints(fn func(queue string)) (unsubscribe func()) {
	return s.hints.Subscribe(fn)
}

// History returns the Job History Policy the store records under.
func (s *Store) History() store.HistoryPolicy { return s.opts.History }
