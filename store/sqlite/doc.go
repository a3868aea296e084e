// Package sqlite is the Embedded Adapter: the Storage Contract (package
// store) over one SQLite file, through the pure-Go driver modernc.org/sqlite
// (no cgo). It is a supported production target, durable and held to the
// Conformance Suite like every adapter, bounded to one host: any number of
// processes on that host may share the file, each a Node coordinating
// through it. Never put the file on a network filesystem; SQLite's locking
// is unsafe there.
//
// # Opening
//
//	s, err := sqlite.Open(ctx, "/var/lib/app/jobs.db", sqlite.Options{})
//
// or, through the URI registry (importing this package registers "sqlite"):
//
//	s, err := store.Open(ctx, "sqlite:///var/lib/app/jobs.db?synchronous=full&schema=app_")
//
// The URI's path is the file: three slashes for an absolute path,
// "sqlite://jobs.db" or "sqlite:jobs.db" for one relative to the working
// directory. Its query may set synchronous (normal, full), schema (the
// Schema Name), migrate (true, false), busy_timeout (a Go duration such as
// 30s), read_conns and history (the Job History Policy: off, transitions
// or transitions+detail); any other key is an error.
//
// Open refuses, with a one-line error naming the path, a file whose
// directory does not exist, a file it cannot read and write, and a file that
// is not a SQLite database (ErrNotDatabase).
//
// OpenDB opens a Store on the application's own *sql.DB instead, so that a
// co-resident deployment (below) runs on one connection pool:
//
//	db, err := sql.Open("sqlite", "/var/lib/app/app.db?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
//	s, err := sqlite.OpenDB(ctx, db, sqlite.Options{})
//
// It refuses a DB whose settings BackWave cannot run on — not this
// package's driver, an in-memory database, no WAL, no busy timeout,
// synchronous=OFF, query_only — naming each one and the DSN parameter that
// sets it.
//
// # Connections and locking
//
// The file runs in WAL mode, so readers never block the writer or each
// other. A Store has one write connection (a *sql.DB with one connection)
// and a small pool of read connections. Every write transaction begins with
// BEGIN IMMEDIATE, taking the file's write lock up front: writes of one
// process queue on the write connection, writes of different processes on
// the lock, waiting up to Options.BusyTimeout. That single writer is what
// makes a claim atomic across every process on the host: the claim reads
// the due jobs and each Queue's Running count (for the Concurrency Limit)
// and leases the jobs inside one write transaction, so no other claim can
// interleave, in this process or another.
//
// On a DB given to OpenDB the store's writes queue in-process the same way,
// one write transaction of the store at a time, and each takes the file's
// write lock with its first statement, whatever the DB's _txlock: the
// guarantee above does not depend on the application's DSN.
//
// Every contract method is one transaction and batch-shaped: a claim leases
// the whole batch in one transaction, an outcome report applies every row
// (each behind its own fence, answering per row) in one transaction, an
// insert writes every job in one transaction.
//
// # Set-based writes
//
// The hot writes cost a few statements per call whatever the size of the
// batch: a claim is one UPDATE … RETURNING per Queue plus one INSERT of its
// Transition Log entries; an outcome report is one UPDATE per kind of
// outcome and one INSERT per kind of entry; an insert without Dependencies
// is one INSERT … SELECT of every job row and one per side table. A batch
// travels as one JSON argument read with json_each, keyed by job id where
// the statement needs one value per job. Their statements are prepared once,
// when the Store opens, on the write connection. These statements keep the
// Monitor's counts (backwave_job_count) themselves, one statement per call;
// every other write is counted by triggers, which skip the rows whose
// count_flip column the statement changed (migrations/0005_count_flip.sql),
// so a node one release behind is still counted.
//
// # Durability: the synchronous setting
//
// The default is synchronous=FULL (SynchronousFull): the WAL is synced on
// every commit, so a committed transaction (an acknowledged enqueue, a
// reported outcome) survives a power loss or operating-system crash, as the
// Storage Contract requires of every adapter. It costs one fsync per write
// transaction.
//
// synchronous=NORMAL (SynchronousNormal, or "?synchronous=normal" in the
// URI) is an explicit choice for a deployment that accepts the trade: in
// WAL mode a committed transaction survives a crash of the process, but a
// power loss or operating-system crash may roll back the last transactions
// committed before it (they were in the WAL but not yet synced), and never
// corrupts the database. A rolled-back claim or outcome is redone the way a
// crashed node's work is, but a rolled-back enqueue is a job the caller was
// told exists and that is gone. docs/benchmarks.md measures both.
//
// # Clock
//
// Lease and due comparisons use the store's clock: the host's wall clock
// unless Options.Clock replaces it (tests pass a vtime.Manual to make time
// pass without sleeping). Times are stored as integer microseconds since the
// Unix epoch, the precision the Conformance Suite allows.
//
// # Schema Name
//
// Every table and index name starts with the Schema Name, "backwave_" by
// default (Options.Schema, "?schema=" in the URI), so BackWave's tables can
// live beside an application's own in one file. The SQL is written against
// the literal prefix "backwave_" and renamed at one choke point, so the
// default runs byte-identical SQL. The Schema Name is fixed for the life of
// the data: choose it before the first migration.
//
// # Migrations
//
// The schema lives in embedded migrations/NNNN_name.sql files, applied in
// order and recorded in the backwave_schema_version table. Migrate applies
// the missing ones inside one BEGIN IMMEDIATE transaction: that is the
// Coordinated Migration of the Embedded Adapter — concurrent migrators, in
// any process, queue on the file's write lock, and each after the first
// re-checks the version and finds nothing to do. Open migrates by default
// (zero setup: a fresh file just works), also through the URI registry;
// Options.ManualMigrate (or "?migrate=false") turns that off for
// deployments that migrate in a deploy step, and Open then refuses a schema
// that is behind (ErrSchemaBehind).
//
// SQLite has no index build that lets writers through: a migration holds
// the write lock for as long as its statements run, and every other write
// on the file — claims and reports of every process — waits for it, up to
// Options.BusyTimeout, and fails after. On a file of a million jobs
// 0002_monitor_operator holds it for about seven seconds and
// 0004_schedule for two (docs/upgrading.md); a new migration that indexes
// or backfills the job table is budgeted against that timeout.
//
// # Mixed-Version Fleet
//
// During a rolling deploy processes of two adjacent releases share the
// file, so every migration declares, in a header line, whether code one
// release behind can run on the schema it leaves: "-- compat: n-1" or
// "-- compat: breaking". Migrate records the mark with the version. A
// build opens (and Migrate leaves alone) a schema up to one migration newer
// than its own, if that migration is marked n-1; a schema two migrations
// ahead, or one ahead by a breaking migration, is refused with
// store.ErrSchemaTooNew, naming both versions. Nothing ever migrates down.
// One migration is one release's step: a release adds at most one
// migration, so one step behind is one release behind.
//
// Migrations are additive first: expand in one release, contract in a
// later one. A migration marked n-1 creates tables, columns (nullable, or
// with a default), indexes and triggers (replacing a trigger is allowed)
// and may backfill rows; it never drops or renames a table, column or
// index, never rebuilds a table (SQLite's way to change a column), never
// adds a NOT NULL column without a default or a unique index to an
// existing table, and never deletes rows. The contract step — dropping
// what the previous release stopped using — is marked breaking. Before the
// first release the schema could be re-baselined; after it, additive-first
// binds. The Conformance Suite's migration lint (storetest.CheckMigrations)
// checks every shipped migration against these rules.
//
// # Transactional Enqueue
//
// In the co-resident deployment BackWave's tables live in the application's
// own database file, and the jobs go in inside a transaction the
// application owns — a *sql.Tx on the file, best from the same *sql.DB as
// the store (OpenDB) — so the jobs and the business writes commit or roll
// back together. Applications call the Client's EnqueueTx and EnqueueManyTx
// (package backwave), which build the jobs exactly as Enqueue does;
// JobInsertManyTx (and JobInsertManyInTx, the store.TxInserter method) is
// the adapter's part. A transaction on another file, an in-memory database
// or another engine is refused with store.ErrTxUnsupported.
//
// Begin those transactions with BEGIN IMMEDIATE (the DSN's
// _txlock=immediate) or make their first statement a write: a deferred
// transaction that reads before it writes fails with SQLITE_BUSY, whatever
// the busy timeout, when a worker's claim wrote in between. No Wake-Up Hint
// announces jobs inserted in the application's transaction: the store
// cannot see its commit, and a hint must never name a job that may roll
// back. Workers find them at their next poll.
//
// In the dedicated deployment (a file of BackWave's own) the capability is
// there but has no business transaction to ride on.
//
// # Schema shape
//
// The job row is kept small because every claim, renewal and outcome
// rewrites it; the payload is written once to a side table at insert, and
// Job Output, Tags (one row per tag, an empty key for a Label) and the Transition
// Log live in side tables too. A partial index holds the due Scheduled jobs
// per Queue in claim order, and another the Running jobs per Queue, which
// serves both the Concurrency-Limit count and the lease-expiry sweep.
//
// # The Transition Observer walk
//
// The file has one writer at a time, so Transition Log ids commit in id
// order and ObserverClaim walks by id: nothing still to commit can get an
// id below one already walked. Ids are rowids without AUTOINCREMENT, so
// retention keeps the job of the entry a live registration's cursor
// stands on, and a deleted newest id is never handed out again below a
// live cursor (observer.go).
//
// # Wake-Up Hints
//
// A Store announces in-process Wake-Up Hints (SubscribeHints) after its own
// commits — never for jobs inserted in the application's transaction (see
// Transactional Enqueue). Other processes on the file hear none; they find
// new work at their next poll, which is all a hint may ever be relied on
// for.
package sqlite
