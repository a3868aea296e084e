package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/backwave/backwave/store"
)

// appDB is what a Store opened with OpenDB keeps of the application's
// *sql.DB, beyond using it as both w and r.
type appDB struct {
	// slot lets one write transaction of this store run at a time, as
	// Open's single write connection does: the store's writes queue
	// in-process instead of on the file's lock.
	slot chan struct{}
	// lock is the first statement of each of the store's write
	// transactions (see beginWrite).
	lock string
}

// lockSQL writes nothing, but takes the file's write lock: a write
// statement first in a transaction does what BEGIN IMMEDIATE does, waiting
// for the lock under the busy timeout before the transaction has read
// anything.
const lockSQL = `UPDATE backwave_schema_version SET version = version WHERE 0`

// OpenDB is Open on the application's own *sql.DB, the co-resident
// deployment with a single connection pool: BackWave's tables live in the
// application's database file, the store runs its reads and writes on db,
// and Transactional Enqueue (the Client's EnqueueTx, or JobInsertManyTx)
// rides on transactions the application begins on db. The store never
// closes db. Unless opts.ManualMigrate is set it first brings the
// schema up to date with Migrate, as Open does.
//
// db must use this package's driver, modernc.org/sqlite (driver name
// "sqlite"), on a database file, with connection settings BackWave relies
// on; OpenDB reads them on one connection and refuses db, naming each one
// missing and how to set it, unless:
//   - the database is a file, not ":memory:" or a temporary one (each
//     connection of a pool would see a database of its own);
//   - journal_mode is WAL (the DSN's _pragma=journal_mode(WAL));
//   - busy_timeout is above zero (_pragma=busy_timeout(10000)): a write
//     waits that long for another connection's write lock;
//   - synchronous is NORMAL or FULL, not OFF (_pragma=synchronous(NORMAL));
//   - query_only is off.
//
// Set them in the DSN, so every connection of the pool has them. The
// busy timeout and synchronous setting are read from db, so opts must
// leave BusyTimeout, Synchronous and ReadConns zero; the pool size is db's.
// BackWave's tables declare no foreign keys, so foreign_keys may be on or
// off.
//
// The store's own write transactions need no particular _txlock: each
// takes the file's write lock with its first statement, and this store's
// writes queue in-process, one at a time. The application's transactions
// that call JobInsertManyTx are its own: begin them with BEGIN IMMEDIATE
// (the DSN's _txlock=immediate, which leaves read-only transactions
// deferred) or make their first statement a write. A deferred transaction
// that reads before its first write fails with SQLITE_BUSY, at once and
// whatever the busy timeout, when another connection — a worker's claim —
// wrote in between.
func OpenDB(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, fmt.Errorf("sqlite: open: %w: nil *sql.DB", store.ErrInvalidParams)
	}
	if _, ok := db.Driver().(*sqlite.Driver); !ok {
		return nil, fmt.Errorf("sqlite: open: %w: the *sql.DB's driver is %T; open it with modernc.org/sqlite (driver name \"sqlite\")",
			store.ErrInvalidParams, db.Driver())
	}
	var set []string
	if opts.BusyTimeout != 0 {
		set = append(set, "BusyTimeout (the DSN's _pragma=busy_timeout(ms))")
	}
	if opts.Synchronous != "" {
		set = append(set, "Synchronous (the DSN's _pragma=synchronous(NORMAL))")
	}
	if opts.ReadConns != 0 {
		set = append(set, "ReadConns (the *sql.DB's own pool size)")
	}
	if len(set) > 0 {
		return nil, fmt.Errorf("sqlite: open: %w: with OpenDB the *sql.DB decides %s; leave them zero", store.ErrInvalidParams, strings.Join(set, ", "))
	}
	st, err := readSettings(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: read the *sql.DB's settings: %w", err)
	}
	if err := st.check(); err != nil {
		return nil, err
	}
	opts.BusyTimeout, opts.Synchronous = st.busy, st.synchronous
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	s := &Store{
		path:   st.file,
		opts:   opts,
		clock:  opts.Clock,
		schema: schemaName(opts.Schema),
		w:      db,
		r:      db,
		app:    &appDB{slot: make(chan struct{}, 1)},
	}
	s.q = newQueries(s.schema)
	s.m = newMonitorQueries(s.schema)
	s.app.lock = s.schema.Rename(lockSQL)
	if !opts.ManualMigrate {
		// lockSQL names the versions table, so it must exist before the
		// first write transaction; Migrate creates it the same way.
		if err := s.busyRetry(ctx, func() error {
			_, err := db.ExecContext(ctx, s.schema.Rename(versionsTable))
			return err
		}); err != nil {
			return nil, openError(s.path, err)
		}
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	if err := s.prepareHot(ctx); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	lock, err := db.PrepareContext(ctx, s.app.lock)
	if err != nil {
		_ = closeHot(s.hot)
		return nil, fmt.Errorf("sqlite: open %s: prepare: %w", s.path, err)
	}
	s.hot[s.app.lock] = lock
	return s, nil
}

// beginWrite begins one of the store's write transactions; done must be
// called once it has ended. On Open's write connection the transaction
// begins with BEGIN IMMEDIATE (the DSN's _txlock). On a DB given to
// OpenDB it waits for this store's previous write to end, then takes the
// file's write lock with lockSQL, whatever the DB's _txlock.
func (s *Store) beginWrite(ctx context.Context) (tx *sql.Tx, done func(), err error) {
	if s.app == nil {
		tx, err := s.begin(ctx, s.w, nil)
		return tx, func() {}, err
	}
	select {
	case s.app.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	release := func() { <-s.app.slot }
	if tx, err = s.begin(ctx, s.w, nil); err != nil {
		release()
		return nil, nil, err
	}
	if err := s.busyRetry(ctx, func() error {
		_, err := s.exec(ctx, tx, s.app.lock)
		return err
	}); err != nil {
		_ = tx.Rollback()
		release()
		return nil, nil, fmt.Errorf("take the write lock: %w", err)
	}
	return tx, release, nil
}

// dbSettings are the connection settings of a *sql.DB that OpenDB checks.
type dbSettings struct {
	file        string // the main database's file; empty for a memory or temporary one
	journalMode string
	busy        time.Duration
	syncLevel   int // PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA
	synchronous Synchronous
	queryOnly   bool
}

// readSettings reads db's settings on one of its connections.
func readSettings(ctx context.Context, db *sql.DB) (dbSettings, error) {
	var st dbSettings
	var busyMillis int64
	err := db.QueryRowContext(ctx, `SELECT
    (SELECT file FROM pragma_database_list WHERE name = 'main'),
    (SELECT journal_mode FROM pragma_journal_mode),
    (SELECT timeout FROM pragma_busy_timeout),
    (SELECT synchronous FROM pragma_synchronous),
    (SELECT query_only FROM pragma_query_only)`).Scan(&st.file, &st.journalMode, &busyMillis, &st.syncLevel, &st.queryOnly)
	if err != nil {
		return st, err
	}
	st.busy = time.Duration(busyMillis) * time.Millisecond
	st.synchronous = SynchronousNormal
	if st.syncLevel >= 2 {
		st.synchronous = SynchronousFull
	}
	return st, nil
}

// check refuses settings BackWave cannot run on, naming every one and how
// to fix it.
func (st dbSettings) check() error {
	if st.file == "" {
		return fmt.Errorf("sqlite: open: %w: the *sql.DB is on an in-memory or temporary database, where each connection of the pool sees a database of its own; open a file",
			store.ErrInvalidParams)
	}
	var need []string
	if !strings.EqualFold(st.journalMode, "wal") {
		need = append(need, fmt.Sprintf("journal_mode is %s, BackWave needs WAL (_pragma=journal_mode(WAL))", st.journalMode))
	}
	if st.busy <= 0 {
		need = append(need, "busy_timeout is 0, so a write meeting another connection's lock fails at once; set one (_pragma=busy_timeout(10000))")
	}
	if st.syncLevel == 0 {
		need = append(need, "synchronous is OFF, under which a power loss may corrupt the file; set NORMAL or FULL (_pragma=synchronous(NORMAL))")
	}
	if st.queryOnly {
		need = append(need, "query_only is on; BackWave writes")
	}
	if len(need) > 0 {
		return fmt.Errorf("sqlite: open %s: %w: the *sql.DB's connection settings do not fit: %s; set them in its DSN so every connection of the pool has them",
			st.file, store.ErrInvalidParams, strings.Join(need, "; "))
	}
	return nil
}
