// Package mariadb is the MariaDB / MySQL Networked Adapter: the Storage
// Contract (package store) over one MariaDB or MySQL database, through the
// pure-Go driver github.com/go-sql-driver/mysql (no cgo). Any number of
// processes on any number of hosts share the database, each a Node
// coordinating through it. It is held to the Conformance Suite
// (store/storetest) and to the differential run against the In-Memory
// Store, like every adapter.
//
// # Supported servers
//
// MariaDB 10.6 and later, and MySQL 8.0 and later: the claim reads due
// jobs with FOR UPDATE SKIP LOCKED, which MariaDB has from 10.6 and MySQL
// from 8.0. Open reads the server's version and refuses an older one with
// ErrServerTooOld, naming the version it found and the one it needs. CI
// runs the whole suite on MariaDB 10.11; see docs/mariadb.md for what is
// and is not tested on MySQL 8.
//
// # Opening
//
//	s, err := mariadb.Open(ctx, "root@tcp(127.0.0.1:3306)/app", mariadb.Options{})
//
// or, through the URI registry (importing this package registers the
// schemes "mariadb" and "mysql", one adapter for both):
//
//	s, err := store.Open(ctx, "mariadb://app:secret@db:3306/app?schema=jobs_")
//
// The URI's path names the database; its query may set schema (the Schema
// Name), migrate (true, false), history (the Job History Policy), tls and
// timeout (the driver's). Any other key is an error. OpenDB opens a Store
// on the application's own *sql.DB instead, for Transactional Enqueue on
// one pool.
//
// # Schema Name: a table prefix, not a database
//
// The Schema Name is a prefix of every table the store uses, "backwave_"
// by default, inside the connection's database — not a database of its
// own. In MySQL a "schema" is a database, so the choice was between the
// two, and the prefix wins on three counts: BackWave's tables live beside
// the application's in the database it already has, so a Transactional
// Enqueue is an insert in that same database and its transaction needs no
// cross-database grant; the store needs no CREATE DATABASE privilege,
// which managed servers rarely hand an application's user; and one
// connection pool serves every prefix (a database per Schema Name would
// need the pool's default database to be BackWave's, or every statement
// qualified). The SQL is written against the literal prefix backwave_ and
// renamed at one choke point, as the Embedded Adapter does. A prefix is
// lower-case letters, digits and underscores, at most 40 bytes (table
// names stay under MySQL's 64). The tests give each test a random prefix
// and drop its tables at the end.
//
// # Commit order: the writer row
//
// PostgreSQL's adapter walks the Transition Log in commit order by reading
// the writing transaction's id and a horizon below which no transaction is
// still running. MySQL and MariaDB expose neither, and an AUTO_INCREMENT
// id is not commit order: two transactions take ids 7 and 8, the one with
// 8 commits first, a walk reads 8 and moves its cursor past 7, and 7, once
// committed, is never delivered.
//
// This adapter orders commits itself. A one-row table, backwave_writer,
// holds the last Transition Log sequence number (and the last job,
// occurrence record and Workflow ids). Every writing transaction's first
// statement is SELECT … FOR UPDATE on that row; InnoDB holds the row lock
// to the transaction's commit or rollback. So writing transactions run
// one at a time, in the order they took the row, and each allocates its
// sequence numbers from the row while it holds it, writing the last one
// back before it commits. Take two transactions T1 and T2 that both write
// entries: if T1 took the row first, T2 cannot read the row before T1 has
// committed (or rolled back, leaving the row as it was), so every number
// T2 allocates is above every number T1 allocated, and T1's entries are
// visible before T2's exist. Sequence order is therefore commit order, and
// a rolled-back transaction hands its numbers out again, so there are no
// gaps either. ObserverClaim reads entries past its cursor in sequence
// order, at READ COMMITTED, and needs no horizon: no entry still to commit
// can take a number below one it has read. ObserverPosition.Commit is
// always 0. The same row makes job ids ascending in insert order, as the
// In-Memory Store's are, and gap-free but for one case: ids handed out in
// a caller's transaction (JobInsertManyInTx) that then rolled back are
// skipped, never given to another job (job.ID: never reused). The Store
// remembers the highest such id (store.IDFloor) and starts every writer
// above it.
//
// The price is throughput: writes do not run in parallel, on any number of
// nodes. A fleet's write rate is bounded by one server's round-trip
// latency times the statements per call, plus the row work of each call,
// so the hot path is written in sets (see Claims): a claim, an outcome
// report, a renewal or an insert of a batch is a dozen statements or
// fewer, whatever the batch's size. Reads (the Monitor,
// the dashboard) take no lock and run in parallel at REPEATABLE READ,
// each on one snapshot; a claim or lease-expiry sweep that finds nothing
// due answers from one unlocked read without taking the row, so an idle
// fleet's polls do not queue on it. The row is also what makes every
// contract method
// atomic with respect to every other on any store instance: the
// Concurrency Limit's Running count, the Rate Limit's window count, a
// unique key's hold and a Dependency latch are read and written under it.
//
// # Claims
//
// JobClaim locks the Queue's settings row, then reads the due jobs of the
// Queue in claim order (due time, then id) with FOR UPDATE SKIP LOCKED, so
// a job row locked by someone else — an operator's ad-hoc transaction, say
// — is passed over rather than waited for; it charges each job's next
// Attempt and leases it in the same transaction. Every fenced write —
// renewal, outcome, Relinquish — applies per row only if the job is still
// Running under the same worker and Attempt; a batch of outcomes is one
// transaction and one stale row does not stop the others.
//
// The claim, the outcome report, the renewal, the insert, lease expiry and
// Relinquish work in sets (batch.go): the batch's rows are read in one
// statement (the claim's locking read returns them whole), each job's
// change is decided in memory by the same code a single move runs, and the
// changes are written in one UPDATE of the rows (setting only the columns
// some row changed), one multi-row INSERT each of new jobs, their Tags and
// the Transition Log entries, and one count of the logs already at the
// cap. A job whose change reaches other job rows — a terminal job with
// dependents still to count, an insert with a unique key or parents or
// into a Workflow, a report, renewal or Relinquish naming one job twice —
// is handled row at a time after the batch so far is written, so every
// read sees what the row-at-a-time code would and the log's entries keep
// their order. Statements for a batch of 50 (TestStatementsPerBatch):
// insert 254 → 7, claim 209 → 12, renewal 101 → 3, report (each with
// Job Output and a Tag) 405 → 12, Relinquish 205 → 10, expiry 207 → 12.
//
// # Clock
//
// Lease and due comparisons use the database server's clock, read in the
// writing transaction's first statement as microseconds since the epoch
// from UTC_TIMESTAMP(6) — whatever the session's time zone, so an
// application's *sql.DB given to OpenDB needs no time zone setting;
// Options.Now overrides it (the tests pin and move it). Times are stored as
// BIGINT microseconds since the Unix epoch.
//
// # Migrations
//
// The schema lives in embedded migration/NNN_name.sql files, recorded in
// the backwave_schema_version table. Migrate holds GET_LOCK on a name
// derived from the database and the Schema Name for the whole call
// (Coordinated Migration): of many nodes migrating at once one applies
// the changes and the others wait, re-read the version and find nothing
// to do. MySQL and MariaDB commit each DDL statement on its own, so a
// migration's statements are written to be run again (CREATE TABLE IF NOT
// EXISTS, INSERT IGNORE) and its version row is written last: a migration
// interrupted half-way is finished by the next Migrate. Open migrates by
// default; Options.ManualMigrate (or ?migrate=false) turns that off, and
// Open then refuses a schema that is behind (ErrSchemaBehind). A schema
// more than one n-1-compatible migration newer than the build is refused
// with store.ErrSchemaTooNew.
//
// # Transactional Enqueue
//
// JobInsertManyInTx (store.TxInserter; the Client's EnqueueTx) inserts
// jobs inside the application's *sql.Tx on the store's database, so they
// commit or roll back with its business writes. It takes the writer row
// in that transaction, which then holds it until the application commits:
// every other write of the store, on every node, waits for that commit.
// Enqueue late in the transaction and commit promptly. Its reads are
// locking reads, so they see the newest committed rows whatever the
// transaction's isolation level. A tx of another type, or on another
// server or database, is refused with store.ErrTxUnsupported.
//
// # Wake-Up Hints
//
// MySQL and MariaDB have no LISTEN/NOTIFY. A Store announces in-process
// Wake-Up Hints (SubscribeHints) after its own commits; other processes
// hear none and find new work at their next poll — which is all a hint may
// ever be relied on for. Jobs inserted in an application's transaction
// are announced by no hint.
//
// # Encryption at Rest
//
// The store implements store.Rewriter: RawScan and RawRewrite reach the
// payloads, Job Output, Failure Details and schedule templates as stored,
// so the encrypt package's rewrite can re-encrypt them under a new key. A
// Failure Detail's RawKey.Entry is its Transition Log sequence number.
package mariadb
