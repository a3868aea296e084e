package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	// The pure-Go SQLite driver, registered with database/sql as "sqlite".
	"modernc.org/sqlite"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

// Synchronous is the SQLite synchronous setting of a store's connections:
// how hard a commit waits for the disk. See the package documentation.
type Synchronous string

const (
	// SynchronousNormal, an explicit choice: in WAL mode a committed
	// transaction survives a crash of the process, but the last transactions
	// before a power loss or operating-system crash may roll back (an
	// acknowledged enqueue among them). The database is never corrupted
	// either way. It trades that for fewer fsyncs (docs/benchmarks.md).
	SynchronousNormal Synchronous = "normal"
	// SynchronousFull (the default): every commit is synced to disk before
	// it returns, so a committed transaction survives a power loss too, as
	// the Storage Contract's durability requires, at the price of one fsync
	// per write transaction.
	SynchronousFull Synchronous = "full"
)

// DefaultSchema is the Schema Name used when Options.Schema is empty.
const DefaultSchema = "backwave_"

// Defaults used where Options leaves a field zero.
const (
	// DefaultBusyTimeout is how long a write waits for the file's write
	// lock held by another process.
	DefaultBusyTimeout = 10 * time.Second
	// DefaultReadConns is the size of the read pool.
	DefaultReadConns = 4
)

// Options configure a Store. The zero value is a working configuration.
type Options struct {
	// Schema is the Schema Name: the prefix of every table and index the
	// store uses, DefaultSchema when empty. It must be an identifier
	// (letters, digits and underscores, not starting with a digit, at most
	// 40 bytes) and is fixed for the life of the data: choose it before the
	// first migration and never change it in place.
	Schema string

	// Synchronous is the durability setting; SynchronousFull when empty.
	Synchronous Synchronous

	// Clock is the store's clock: every due and Lease comparison and every
	// stored time reads it, and nothing else does. Nil means the host's
	// clock. Tests pass a vtime.Manual to make time pass without sleeping.
	// Every process sharing a file must use the host's clock in production.
	Clock vtime.Clock

	// ManualMigrate turns off the migration Open otherwise runs. Open then
	// refuses a database whose schema is behind this build; the deployment
	// runs Migrate itself (a deploy step that serializes migration).
	ManualMigrate bool

	// BusyTimeout is how long a call waits for the file's write lock held
	// by another process before it fails; DefaultBusyTimeout when zero.
	BusyTimeout time.Duration

	// ReadConns bounds the read connections (Monitor reads); the store
	// always has exactly one write connection. DefaultReadConns when zero.
	ReadConns int

	// History is the Job History Policy; the zero value records every
	// Transition Log entry with its Failure Detail. store.HistoryOff skips
	// the log writes altogether.
	History store.HistoryPolicy
}

// withDefaults fills the zero fields and validates the rest.
func (o Options) withDefaults() (Options, error) {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if err := ValidateSchema(o.Schema); err != nil {
		return o, err
	}
	if err := o.History.Validate(); err != nil {
		return o, fmt.Errorf("sqlite: %w", err)
	}
	switch o.Synchronous {
	case "":
		o.Synchronous = SynchronousFull
	case SynchronousNormal, SynchronousFull:
	default:
		return o, fmt.Errorf("sqlite: %w: synchronous %q (want %q or %q)", store.ErrInvalidParams, o.Synchronous, SynchronousNormal, SynchronousFull)
	}
	if o.Clock == nil {
		o.Clock = wallClock{}
	}
	switch {
	case o.BusyTimeout == 0:
		o.BusyTimeout = DefaultBusyTimeout
	case o.BusyTimeout < 0:
		return o, fmt.Errorf("sqlite: %w: busy timeout %v is negative", store.ErrInvalidParams, o.BusyTimeout)
	}
	switch {
	case o.ReadConns == 0:
		o.ReadConns = DefaultReadConns
	case o.ReadConns < 0:
		return o, fmt.Errorf("sqlite: %w: read connections %d is negative", store.ErrInvalidParams, o.ReadConns)
	}
	return o, nil
}

// wallClock is the host's clock.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now().Round(0) }

// Store is the Embedded Adapter over one SQLite file. It implements
// store.Store, store.HintSource and store.ClockSource and is safe for concurrent use; any
// number of Stores, in any number of processes on one host, may share the
// file. Create one with Open.
type Store struct {
	path   string
	opts   Options
	clock  vtime.Clock
	schema schemaName
	q      *queries
	m      *monitorQueries

	// w is the single write connection: every write transaction of this
	// process goes through it, as BEGIN IMMEDIATE, so the file's write lock
	// orders it against every other process.
	w *sql.DB
	// r is the read pool for Monitor reads.
	r *sql.DB
	// hot holds the hot statements, prepared on w at Open (stmtcache.go);
	// never changed after.
	hot map[string]*sql.Stmt
	// app is set when w and r are the application's own *sql.DB (OpenDB,
	// opendb.go), which the store never closes.
	app *appDB

	hints  store.HintHub
	closed atomic.Bool
	// idFloor is the highest job id handed out inside a caller's
	// transaction (idfloor.go); every insert keeps new ids above it.
	idFloor store.IDFloor
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.HintSource  = (*Store)(nil)
	_ store.TxInserter  = (*Store)(nil)
	_ store.ClockSource = (*Store)(nil)
)

// Open opens (creating if needed) the SQLite database at path and returns a
// Store over it. Unless opts.ManualMigrate is set it first brings the schema
// up to date with Migrate. It opens a schema one n-1-compatible migration
// newer than this build (a Mixed-Version Fleet) and refuses a newer one (an
// error wrapping store.ErrSchemaTooNew), a path whose
// directory does not exist, a file it cannot read, and a file that is not a
// SQLite database, each with a one-line error naming the path.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	s, err := connect(path, opts)
	if err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		_ = s.w.Close()
		_ = s.r.Close()
		return nil, err
	}
	if err := s.prepareHot(ctx); err != nil {
		_ = s.w.Close()
		_ = s.r.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return s, nil
}

// connect validates the options and the path and sets up the connection
// pools; it touches no table.
func connect(path string, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkPath(path); err != nil {
		return nil, err
	}
	s := &Store{
		path:   path,
		opts:   opts,
		clock:  opts.Clock,
		schema: schemaName(opts.Schema),
	}
	s.q = newQueries(s.schema)
	s.m = newMonitorQueries(s.schema)
	if s.w, err = sql.Open("sqlite", dsn(path, opts, true)); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if s.r, err = sql.Open("sqlite", dsn(path, opts, false)); err != nil {
		_ = s.w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.r.SetMaxOpenConns(opts.ReadConns)
	s.r.SetMaxIdleConns(opts.ReadConns)
	return s, nil
}

// start checks the file and the schema, migrating unless told not to.
func (s *Store) start(ctx context.Context) error {
	if err := s.busyRetry(ctx, func() error { return s.w.PingContext(ctx) }); err != nil {
		return openError(s.path, err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return openError(s.path, err)
	}
	latest := latestVersion()
	switch {
	case v > latest:
		err := s.busyRetry(ctx, func() error { return checkWindow(ctx, s.r, s.schema, v, latest) })
		if err != nil {
			return openError(s.path, err)
		}
		return nil
	case v == latest:
		return nil
	case s.opts.ManualMigrate && v == 0:
		return schemaBehind(fmt.Sprintf("sqlite: open %s: schema %q has no BackWave tables", s.path, s.schema))
	case s.opts.ManualMigrate:
		return schemaBehind(fmt.Sprintf("sqlite: open %s: schema %q is at version %d, this build needs %d", s.path, s.schema, v, latest))
	}
	if _, err := s.Migrate(ctx); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	return nil
}

// ErrSchemaBehind is returned by Open with Options.ManualMigrate when the
// database's schema is older than this build needs: Migrate brings it up.
var ErrSchemaBehind = errors.New("sqlite: schema is behind this version of BackWave")

// schemaBehind is Open's ErrSchemaBehind: its text says where the schema
// stands and no more, so a caller can add its own way to migrate.
type schemaBehind string

func (e schemaBehind) Error() string        { return string(e) }
func (e schemaBehind) Is(target error) bool { return target == ErrSchemaBehind }

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Schema returns the store's Schema Name (its table-name prefix).
func (s *Store) Schema() string { return string(s.schema) }

// Clock returns the store's clock: Options.Clock, or the host's clock. A
// backwave.Client over the Store uses it unless its Config.Clock is set.
func (s *Store) Clock() vtime.Clock { return s.clock }

// Close closes the store's connections (a *sql.DB given to OpenDB stays
// open). Every later call, Close included, fails with store.ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return fmt.Errorf("sqlite: %w", store.ErrClosed)
	}
	if s.app != nil {
		return closeHot(s.hot)
	}
	return errors.Join(closeHot(s.hot), s.w.Close(), s.r.Close())
}

// ready fails a call made after Close or with a done context.
func (s *Store) ready(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite: %w", store.ErrClosed)
	}
	return ctx.Err()
}

// write runs fn in one write transaction (see beginWrite: BEGIN IMMEDIATE
// on the single write connection) and commits it, or rolls it back if fn
// fails. what names the call for errors.
func (s *Store) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	tx, done, err := s.beginWrite(ctx)
	if err != nil {
		return s.fail(what, err)
	}
	defer done()
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return s.fail(what, err)
	}
	if err := tx.Commit(); err != nil {
		return s.fail(what, err)
	}
	return nil
}

// read runs fn in one read transaction on the read pool, so every query in
// it sees one snapshot.
func (s *Store) read(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	tx, err := s.begin(ctx, s.r, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.fail(what, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return s.fail(what, err)
	}
	return nil
}

// begin begins a transaction on db, retrying SQLITE_BUSY (see busyRetry).
func (s *Store) begin(ctx context.Context, db *sql.DB, opts *sql.TxOptions) (*sql.Tx, error) {
	var tx *sql.Tx
	err := s.busyRetry(ctx, func() error {
		var err error
		tx, err = db.BeginTx(ctx, opts)
		return err
	})
	return tx, err
}

// busyRetry calls fn until it does not fail with SQLITE_BUSY or the busy
// timeout has passed. SQLite waits for the file's locks itself under the
// busy timeout, but answers SQLITE_BUSY at once in a few states it cannot
// wait out safely — most often while another connection turns a fresh file
// to WAL mode, which a new connection's setup or a BEGIN may meet — so those
// are retried here, with a short growing pause.
func (s *Store) busyRetry(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(s.opts.BusyTimeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := fn()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY, any extended code.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == 5
}

// fail wraps an error of a call, turning the driver's "closed" into
// store.ErrClosed. Contract errors (store.ErrNotFound, …) and context errors
// pass through errors.Is.
func (s *Store) fail(what string, err error) error {
	if errors.Is(err, sql.ErrConnDone) || (s.closed.Load() && err.Error() == "sql: database is closed") {
		return fmt.Errorf("sqlite: %s: %w", what, store.ErrClosed)
	}
	return fmt.Errorf("sqlite: %s: %w", what, err)
}
