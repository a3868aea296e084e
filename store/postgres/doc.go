// Package postgres is the Networked Adapter: the Storage Contract (package
// store) on PostgreSQL, through pgx v5. Any number of nodes on any number of
// hosts coordinate through the database alone.
//
// # Opening
//
// Open takes a connection string and owns its pgx pool; OpenPool takes the
// caller's pool; OpenDB serves database/sql users (a *sql.DB on pgx's stdlib
// driver). Importing the package registers the URI schemes "postgres" and
// "postgresql" with store.Open:
//
//	s, err := store.Open(ctx, "postgres://app@db:5432/app?sslmode=require&schema=jobs")
//
// Besides pgx's own parameters, such a URI may carry schema=NAME,
// migrate=false and history=off|transitions|transitions+detail (the Job
// History Policy; see ParseURI).
//
// Open pings the database, migrates the schema unless Options.SkipMigrate is
// set, and checks the schema version and the role's privileges, so a wrong
// password, an unreachable host or a role without rights fails there and
// not at the first claim.
//
// # Schema Name
//
// All objects live in one PostgreSQL schema, "backwave" unless
// Options.Schema names another. Every statement is written against the
// literal backwave and renamed at one choke point (Store.sql), so the
// default schema runs byte-identical SQL. Stores with different schemas in
// one database share nothing, not even Wake-Up Hints.
//
// # Migrations
//
// Migrations are embedded .sql files applied in version order and recorded
// in the schema's migration table. Open migrates by default; Migrate,
// MigratePool and MigrateDB run it as a separate deploy step, reporting the
// versions applied. Migrate is Coordinated Migration: it runs under a
// session advisory lock keyed by the Schema Name, so of many nodes starting
// at once one applies the schema and the rest wait, re-check and do
// nothing. Behind a transaction pooler (pooler=transaction) the lock is a
// transaction-level advisory lock held by a transaction kept open on a
// second connection for the whole call.
//
// No migration blocks the job tables for an index build. Each migration's
// statements and its version row commit in one short transaction; an index
// on a table that already exists is an index step instead, a line
// "CREATE INDEX CONCURRENTLY IF NOT EXISTS …" at the end of the file, which
// the runner builds after that transaction, one at a time, still under the
// lock. Claims and reports go on meanwhile. A build interrupted between the
// two is finished by the next Migrate (an INVALID index, what a failed
// CREATE INDEX CONCURRENTLY leaves, is dropped and built again). A unique
// index is never an index step: it is a constraint, and one half built
// enforces nothing. A statement waits at most two seconds for a table
// lock; then the migration's transaction rolls back and is tried again
// after a pause, so an ALTER TABLE queued behind a long transaction does not
// hold up the claims queued behind it.
//
// # Mixed-Version Fleet
//
// During a rolling deploy nodes of two adjacent releases share the schema,
// so every migration declares, in a header line, whether code one release
// behind can run on the schema it leaves: "-- compat: n-1" or
// "-- compat: breaking". The runner records the mark with the version. A
// build opens (and Migrate leaves alone) a schema up to one migration newer
// than its own, if that migration is marked n-1; a schema two migrations
// ahead, or one ahead by a breaking migration, is refused with
// store.ErrSchemaTooNew, naming both versions. Nothing ever migrates down.
// One migration is one release's step: a release adds at most one
// migration, so one step behind is one release behind.
//
// Migrations are additive first: expand in one release, contract in a
// later one. A migration marked n-1 creates tables, columns (nullable, or
// with a default), indexes, functions and triggers and may backfill rows;
// it never drops or renames a table, column, index or constraint, never
// changes a column's type, never adds a NOT NULL column without a default,
// a constraint or a unique index to an existing table, and never deletes
// rows. The contract step — dropping what the previous release stopped
// using — is marked breaking. The Conformance Suite's migration lint
// (storetest.CheckMigrations) checks every shipped migration against these
// rules.
//
// # Clock
//
// Lease and due comparisons use the database server's now(), the one clock
// every node shares. Options.Now pins a different time for tests.
//
// # Claims and the Concurrency Limit
//
// A claim is one round trip (with pgx, a pipelined batch run as one
// implicit transaction): it locks the settings rows of the limited Queues it
// names, in name order, then picks due jobs with FOR UPDATE SKIP LOCKED,
// charges their Attempts, leases them and logs the transition in a single
// statement. The Running count of a limited Queue is counted under its lock,
// never kept as a counter, so it cannot drift; unlimited Queues take no lock
// and their claimers never wait for each other. The price: claims that name
// a limited Queue take turns on its row, cluster-wide, one short
// transaction each. See claim.go.
//
// A Queue with a Rate Limit is locked the same way, and the claim counts the
// jobs it leased against the window in the same statement (rate.go); with
// ClaimParams.Reopen, one more statement in the batch reads when a spent
// window ends.
//
// # Outcomes
//
// OutcomeReport applies a whole batch in one UPDATE … FROM unnest(…), each
// row fenced by (worker, Attempt, Running), and returns which rows applied.
// LeaseExpire skips rows another transaction is writing (FOR UPDATE SKIP
// LOCKED), so a sweep never deadlocks with a worker's report.
//
// # Storage layout
//
// The job row is kept small, since it is rewritten at every state change:
// the payload is written once to job_payload, Tags live in job_tag (a Label
// with the empty key, a Keyed Tag with its key, so the two kinds stay
// apart), and every state change appends to job_transition, the Transition
// Log. Job Output is a column of the job row, written with the Succeeded
// transition. The claimable index covers only Scheduled jobs, per Queue in
// due order.
//
// # The Transition Observer walk
//
// A job_transition row's seq is drawn from its identity sequence when the
// row is inserted, long before its transaction commits, so a lower seq may
// commit after a higher one and a walk by "seq > cursor" could step past a
// row still to commit and never see it. Every row therefore records the id
// of the transaction that wrote it (the xid column, default
// pg_current_xact_id()), and ObserverClaim walks in (xid, seq) order and
// returns only rows with xid < pg_snapshot_xmin(pg_current_snapshot()):
// every transaction below that horizon has ended, and every row still to
// commit belongs to a transaction at or above it, so it lies after every
// row a walk returned and the cursor never passes it (observer.go gives
// the argument in full; TestObserverHorizonHoldsUncommitted holds a
// transaction open to check it). The horizon is the cluster's: while any
// transaction that took an xid stays open — in any database of the
// server — younger rows wait for it. A long-running or idle-in-transaction
// session delays deliveries (as it holds back VACUUM), never loses one;
// idle_in_transaction_session_timeout bounds it. Rows written before the
// xid column existed read as xid 0.
//
// # Wake-Up Hints
//
// Writes that make jobs claimable send at most one NOTIFY per Queue per
// statement, with the Queue's name as payload; inside a caller's transaction
// it is delivered at commit. SubscribeHints starts a listener on a dedicated
// connection that reconnects after a delay and, after every (re)connect,
// hints every known Queue. Hints only cut latency: polling stays the source
// of truth.
//
// # Behind a transaction pooler
//
// With pooler=transaction in the URL (Options.Pooler), for PgBouncer's
// pool_mode = transaction and the poolers of managed services, no session
// state outlasts a transaction: statements run in pgx's QueryExecModeExec
// (no named prepared statements), the migration lock is transaction-level,
// and the hint listener connects to listen= (Options.ListenURL, the server
// itself), or none runs and Open logs once that workers poll. A listen= that
// does not hear a NOTIFY sent through the store's connections is refused at
// Open. docs/production-postgres.md says what to write.
//
// # Transactional Enqueue
//
// Applications call the Client's EnqueueTx and EnqueueManyTx (package
// backwave) with their own pgx.Tx, or *sql.Tx through pgx's stdlib driver:
// the Client builds the jobs exactly as Enqueue does, and the store inserts
// them inside that transaction with JobInsertManyTx, JobInsertManySQLTx or
// JobInsertManyInTx (the store.TxInserter method taking either), whichever
// connection mode the store itself uses. The jobs exist for workers once
// the transaction commits, and never if it rolls back. The insert's NOTIFY
// is transactional too: PostgreSQL delivers the Wake-Up Hint at commit and
// drops it on rollback. Before it inserts, one statement in the caller's
// transaction checks that it runs on the store's database (the same
// database of the same cluster, by pg_control_system's system identifier)
// and that its driver encodes arrays; any other transaction is refused with
// store.ErrTxUnsupported.
//
// # Enqueue from other languages
//
// Code that is not Go enqueues in its own transaction through SQL
// functions in the schema (migration/012_sql_enqueue.sql):
// backwave.enqueue(wire_name, payload, …) and backwave.enqueue_many(json)
// apply the checks and defaults of the Go insert path and write the rows
// it writes, which sqlenqueue_test.go holds them to; a bad argument raises
// SQLSTATE 22004 or 22023 naming the field. A unique key's Replace and
// Debounce modes (migration/017_sql_enqueue_modes.sql) rewrite a Scheduled
// holder as replace.go does, which sqlenqueue_modes_test.go holds them to,
// and raise SQLSTATE 55000 for any other holder;
// backwave.enqueue_many_results also answers which jobs rewrote one. See
// docs/other-languages.md.
package postgres
