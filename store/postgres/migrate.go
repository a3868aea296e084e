package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave/store"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// compat is a migration's compatibility mark: whether code one release
// behind (N-1) can run on the schema the migration leaves. See the package
// documentation, Migrations.
type compat string

const (
	// compatN1: additive; a node one release behind keeps working.
	compatN1 compat = "n-1"
	// compatBreaking: a node one release behind must not open the schema.
	compatBreaking compat = "breaking"
)

// migration is one embedded schema change, named NNN_description.sql.
type migration struct {
	version int
	name    string
	compat  compat
	sql     string // the file's text
	// body is the file without its index steps: applied, with the version
	// row, in one transaction.
	body string
	// steps are the index steps, built after the transaction commits.
	steps []indexStep
}

// indexStep is one CREATE INDEX CONCURRENTLY IF NOT EXISTS statement of a
// migration: an index on an existing table, built without blocking writes,
// outside the migration's transaction (PostgreSQL refuses CONCURRENTLY
// inside one).
type indexStep struct {
	index string // the index's name, unqualified
	sql   string
}

var (
	compatHeader = regexp.MustCompile(`(?m)^-- compat: (\S*)[ \t]*$`)
	// stepStatement is an index step: it starts a line and ends at the
	// first semicolon (an index definition holds none).
	stepStatement = regexp.MustCompile(`(?m)^CREATE INDEX CONCURRENTLY IF NOT EXISTS (\w+) ON [^;]*;[ \t]*\n?`)
	// blankSQL is text with nothing to run: comment lines and blank ones.
	blankSQL = regexp.MustCompile(`^(?:[ \t]*(?:--[^\n]*)?\n?)*$`)
)

// parseMigration reads one migration's text: its compatibility mark (one
// header line "-- compat: n-1" or "-- compat: breaking") and its index
// steps.
func parseMigration(version int, name, text string) (migration, error) {
	m := migration{version: version, name: name, sql: text}
	marks := compatHeader.FindAllStringSubmatch(text, -1)
	if len(marks) != 1 {
		return m, fmt.Errorf("migration %s has %d \"-- compat:\" lines, want one", name, len(marks))
	}
	switch c := compat(marks[0][1]); c {
	case compatN1, compatBreaking:
		m.compat = c
	default:
		return m, fmt.Errorf("migration %s: compat %q, want %q or %q", name, c, compatN1, compatBreaking)
	}
	for _, st := range stepStatement.FindAllStringSubmatch(text, -1) {
		m.steps = append(m.steps, indexStep{index: st[1], sql: strings.TrimSpace(st[0])})
	}
	m.body = stepStatement.ReplaceAllString(text, "")
	for line := range strings.Lines(m.body) {
		if code, _, _ := strings.Cut(line, "--"); !strings.Contains(code, "CONCURRENTLY") {
			continue
		}
		return m, fmt.Errorf("migration %s: CONCURRENTLY outside an index step (a line starting CREATE INDEX CONCURRENTLY IF NOT EXISTS)", name)
	}
	return m, nil
}

// migrations returns the embedded migrations in version order. A malformed
// file is a bug in this package's build.
func migrations() []migration {
	entries, err := fs.ReadDir(migrationFS, "migration")
	if err != nil {
		panic(fmt.Sprintf("postgres: read embedded migrations: %v", err))
	}
	var out []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			panic(fmt.Sprintf("postgres: embedded migration %q is not named NNN_description.sql", name))
		}
		body, err := migrationFS.ReadFile(path.Join("migration", name))
		if err != nil {
			panic(fmt.Sprintf("postgres: read embedded migration %s: %v", name, err))
		}
		m, err := parseMigration(v, strings.TrimSuffix(name, ".sql"), string(body))
		if err != nil {
			panic("postgres: embedded " + err.Error())
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	// Versions rise from 1. One may be missing while the features that own
	// the numbers between are built on separate branches; Migrate applies
	// every migration above the recorded version.
	for i, m := range out {
		if (i == 0 && m.version != 1) || (i > 0 && m.version == out[i-1].version) {
			panic(fmt.Sprintf("postgres: embedded migrations do not start at 1 or repeat version %d", m.version))
		}
	}
	return out
}

// SchemaVersion is the schema version this build of the adapter knows: the
// number of its last embedded migration.
func SchemaVersion() int {
	all := migrations()
	return all[len(all)-1].version
}

// MigrateResult reports what one Migrate call did.
type MigrateResult struct {
	// From is the schema version before the call (0 for a schema that did
	// not exist).
	From int
	// Applied lists the versions this call applied, in order; empty when the
	// schema was already current (for instance because another node
	// migrated it while this one waited for the lock).
	Applied []int
	// Built names the indexes this call built as index steps (CREATE INDEX
	// CONCURRENTLY), those of an earlier, interrupted call included.
	Built []string
	// Version is the schema version after the call: one step above
	// SchemaVersion when the schema is within the Mixed-Version Fleet window
	// of this build.
	Version int
}

// Migrate brings the store's schema up to SchemaVersion. It never migrates
// down: a schema one n-1-compatible step newer than this build is left as
// it is (Version reports it), and a wider skew, or a newer step marked
// breaking, fails with an error wrapping store.ErrSchemaTooNew that names
// both versions.
//
// Each migration's statements and its version row commit in one
// transaction (retried when a statement waits longer than lockTimeout for a
// table lock); then its index steps run one at a time outside it, as
// CREATE INDEX CONCURRENTLY, so claims and reports never wait for an index
// build on the job tables. A build interrupted between the two (a crash, a
// cancelled context) is finished by the next Migrate: an index step missing,
// or left INVALID by the interrupted build (pg_index.indisvalid), is dropped
// and built again.
//
// It is Coordinated Migration: unless Options.NoMigrationLock is set, the
// whole call holds a session advisory lock keyed by the Schema Name, so of
// many nodes migrating at once one applies the changes and the others wait,
// re-read the version and find nothing to do. Behind a transaction pooler
// (Options.Pooler) the lock is a transaction-level one, held by a
// transaction kept open for the call on a second connection.
func (s *Store) Migrate(ctx context.Context) (MigrateResult, error) {
	return s.migrate(ctx, migrations())
}

// migrate is Migrate over a given migration list (tests append to it the
// steps of a later build).
func (s *Store) migrate(ctx context.Context, all []migration) (MigrateResult, error) {
	if err := s.enter(ctx); err != nil {
		return MigrateResult{}, err
	}
	var res MigrateResult
	err := s.db.session(ctx, func(c session) error {
		if !s.opts.NoMigrationLock {
			release, err := s.acquireMigrationLock(ctx, c)
			if err != nil {
				return err
			}
			defer release()
		}
		var err error
		res, err = s.applyMigrations(ctx, c, all)
		return err
	})
	if err != nil {
		return MigrateResult{}, s.wrap("migrate schema "+s.schema, err)
	}
	return res, nil
}

// migrationLock is the Coordinated Migration lock's key, per Schema Name.
const migrationLock = `hashtext('backwave.migrate')`

// acquireMigrationLock takes the Coordinated Migration lock for a
// migration running on c and returns its release: a session advisory lock on
// c itself (lockMigration), or, behind a transaction pooler, where c's
// session is a different server session from one statement to the next, a
// transaction-level one held by a transaction of its own (lockMigrationTx).
func (s *Store) acquireMigrationLock(ctx context.Context, c session) (release func(), err error) {
	if s.opts.Pooler == PoolerTransaction {
		return s.lockMigrationTx(ctx)
	}
	if err := s.lockMigration(ctx, c); err != nil {
		return nil, err
	}
	return func() { s.unlockMigration(ctx, c) }, nil
}

// lockMigration takes the Coordinated Migration lock on c, waiting while
// another node holds it. It polls pg_try_advisory_lock instead of blocking
// in pg_advisory_lock: a session blocked inside a statement holds a
// snapshot, and CREATE INDEX CONCURRENTLY waits for every older snapshot to
// end, so the holder's index step would wait for the waiter that waits for
// the holder, and PostgreSQL's deadlock detector would end the index build.
// Between polls a waiter holds no snapshot.
func (s *Store) lockMigration(ctx context.Context, c session) error {
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 250*time.Millisecond) {
		var got bool
		err := c.query(ctx, s.sql(`SELECT pg_try_advisory_lock(`+migrationLock+`)`), nil, func(scan scanFunc) error {
			return scan(&got)
		})
		if err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if got {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for the migration lock: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// unlockMigration releases the lock lockMigration took, even after ctx is
// done. A connection that cannot release it is closed instead, which
// releases it too; either way the migration's own result stands.
func (s *Store) unlockMigration(ctx context.Context, c session) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := c.exec(ctx, s.sql(`SELECT pg_advisory_unlock(`+migrationLock+`)`)); err != nil {
		c.discard()
	}
}

// applyMigrations is Migrate's work, on c, under the lock.
func (s *Store) applyMigrations(ctx context.Context, c session, all []migration) (MigrateResult, error) {
	current, err := s.readVersion(ctx, c)
	if err != nil {
		return MigrateResult{}, err
	}
	if current < 0 {
		if err := c.inTx(ctx, func(q querier) error { return s.createVersionTable(ctx, q) }); err != nil {
			return MigrateResult{}, err
		}
		current = 0
	}
	res := MigrateResult{From: current, Version: current}
	if latest := all[len(all)-1].version; current > latest {
		return res, s.checkWindow(ctx, c, current, latest)
	}
	// Finish the index steps of the migration the schema is at, which an
	// interrupted call may have left unbuilt.
	if i := slices.IndexFunc(all, func(m migration) bool { return m.version == current }); i >= 0 {
		if res.Built, err = s.buildSteps(ctx, c, all[i], res.Built); err != nil {
			return MigrateResult{}, err
		}
	}
	for _, m := range all {
		if m.version <= current {
			continue
		}
		if len(res.Applied) == 0 {
			// The compatibility marks are recorded from this build on.
			if _, err := c.exec(ctx, s.sql(`ALTER TABLE backwave.migration ADD COLUMN IF NOT EXISTS compat text`)); err != nil {
				return MigrateResult{}, fmt.Errorf("add the compat column to the version table: %w", err)
			}
		}
		if err := s.applyBody(ctx, c, m); err != nil {
			return MigrateResult{}, fmt.Errorf("apply %s: %w", m.name, err)
		}
		res.Applied = append(res.Applied, m.version)
		res.Version = m.version
		if res.Built, err = s.buildSteps(ctx, c, m, res.Built); err != nil {
			return MigrateResult{}, err
		}
	}
	return res, nil
}

// A migration's statements wait at most lockTimeout for a table lock, and
// the migration is tried lockTries times. A statement waiting for a lock
// holds up every later statement that needs the table — an ALTER TABLE
// queued behind one long transaction on the job table would hold up every
// claim and report — so it gives up instead, its transaction rolls back,
// and the migration is tried again after a pause.
const (
	lockTimeout = 2 * time.Second
	lockTries   = 30
	// lockNotAvailable is the SQLSTATE of a lock_timeout that ran out.
	lockNotAvailable = "55P03"
)

// applyBody applies m's body and records its version in one transaction.
func (s *Store) applyBody(ctx context.Context, c session, m migration) error {
	for try := 1; ; try++ {
		err := c.inTx(ctx, func(q querier) error {
			if _, err := q.exec(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, lockTimeout.Milliseconds())); err != nil {
				return err
			}
			if !blankSQL.MatchString(m.body) {
				if _, err := q.exec(ctx, s.sql(m.body)); err != nil {
					return err
				}
			}
			_, err := q.exec(ctx, s.sql(`INSERT INTO backwave.migration (version, name, compat) VALUES ($1, $2, $3)`),
				m.version, m.name, string(m.compat))
			return err
		})
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &pgErr) || pgErr.Code != lockNotAvailable:
			return err
		case try == lockTries:
			return fmt.Errorf("a table lock stayed taken through %d tries of %v: %w", lockTries, lockTimeout, err)
		}
		t := time.NewTimer(min(time.Duration(try)*100*time.Millisecond, lockTimeout))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after waiting for a table lock: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// buildSteps builds m's index steps that are missing or INVALID, appending
// their names to built. An INVALID index is what an interrupted CREATE
// INDEX CONCURRENTLY leaves: it is maintained by writes but never used, and
// IF NOT EXISTS would keep it, so it is dropped first.
func (s *Store) buildSteps(ctx context.Context, c session, m migration, built []string) ([]string, error) {
	for _, st := range m.steps {
		var valid []bool
		err := c.query(ctx, s.sql(`SELECT i.indisvalid FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'backwave' AND c.relname = $1`), []any{st.index}, func(scan scanFunc) error {
			var v bool
			err := scan(&v)
			valid = append(valid, v)
			return err
		})
		if err != nil {
			return built, fmt.Errorf("look up index %s of %s: %w", st.index, m.name, err)
		}
		if len(valid) == 1 && valid[0] {
			continue
		}
		if len(valid) == 1 {
			if _, err := c.exec(ctx, s.sql(`DROP INDEX CONCURRENTLY IF EXISTS backwave.`+st.index)); err != nil {
				return built, fmt.Errorf("drop invalid index %s of %s: %w", st.index, m.name, err)
			}
		}
		if _, err := c.exec(ctx, s.sql(st.sql)); err != nil {
			return built, fmt.Errorf("build index %s of %s: %w", st.index, m.name, err)
		}
		built = append(built, st.index)
	}
	return built, nil
}

// recordedStep is one row of the version table.
type recordedStep struct {
	version int
	name    string
	compat  compat
}

// checkWindow decides whether this build, which knows schema versions up
// to latest, may run on a schema at current > latest: only if exactly one
// migration is recorded above latest and it is marked n-1. Otherwise the
// error wraps store.ErrSchemaTooNew.
func (s *Store) checkWindow(ctx context.Context, q querier, current, latest int) error {
	var newer []recordedStep
	err := q.query(ctx, s.sql(`SELECT version, name, coalesce(compat, '') FROM backwave.migration WHERE version > $1 ORDER BY version`),
		[]any{latest}, func(scan scanFunc) error {
			var r recordedStep
			if err := scan(&r.version, &r.name, &r.compat); err != nil {
				return err
			}
			newer = append(newer, r)
			return nil
		})
	if err != nil {
		return fmt.Errorf("read the migrations newer than this build: %w", err)
	}
	steps := make([]store.SchemaStep, len(newer))
	for i, r := range newer {
		steps[i] = store.SchemaStep{Version: r.version, Name: r.name, Compat: string(r.compat)}
	}
	return store.CheckSchemaWindow(s.schema, current, latest, steps)
}

// Migrate connects to the database connString names, brings the schema
// opts.Schema up to SchemaVersion as Store.Migrate does, and disconnects. It
// is the separate deploy step of a fleet that opens its stores with
// SkipMigrate. Only opts.Schema, opts.NoMigrationLock and opts.Pooler (or
// the URL's pooler=) are used.
func Migrate(ctx context.Context, connString string, opts Options) (MigrateResult, error) {
	cfg, opts, err := parsePoolConfig(connString, opts)
	if err != nil {
		return MigrateResult{}, err
	}
	cfg.MaxConns = 1
	if opts.Pooler == PoolerTransaction {
		cfg.MaxConns = 2 // one more for the transaction holding the lock
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("postgres: create pool: %w", err)
	}
	defer pool.Close()
	return MigratePool(ctx, pool, opts)
}

// MigratePool is Migrate on the caller's pgx pool.
func MigratePool(ctx context.Context, pool *pgxpool.Pool, opts Options) (MigrateResult, error) {
	return migrateWith(ctx, newPoolDB(pool, false), opts)
}

// MigrateDB is Migrate on the caller's database/sql DB (pgx's stdlib
// driver).
func MigrateDB(ctx context.Context, db *sql.DB, opts Options) (MigrateResult, error) {
	return migrateWith(ctx, newSQLDB(db, false), opts)
}

func migrateWith(ctx context.Context, db database, opts Options) (MigrateResult, error) {
	schema, err := checkSchema(opts.Schema)
	if err != nil {
		return MigrateResult{}, err
	}
	s := &Store{db: db, schema: schema, opts: opts}
	if err := db.ping(ctx); err != nil {
		return MigrateResult{}, fmt.Errorf("postgres: connect: %w", err)
	}
	return s.Migrate(ctx)
}

// readVersion returns the schema's version: -1 if the schema or its version
// table does not exist yet.
func (s *Store) readVersion(ctx context.Context, q querier) (int, error) {
	// Without USAGE on the schema its tables look absent; say so instead.
	var exists, usable, table bool
	err := q.query(ctx, s.sql(`SELECT n.nspname IS NOT NULL,
    n.nspname IS NOT NULL AND has_schema_privilege(n.oid, 'USAGE'),
    EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = n.oid AND c.relname = 'migration')
FROM (SELECT 1) one LEFT JOIN pg_namespace n ON n.nspname = 'backwave'`), nil, func(scan scanFunc) error {
		return scan(&exists, &usable, &table)
	})
	if err != nil {
		return 0, fmt.Errorf("look for the version table: %w", err)
	}
	switch {
	case exists && !usable:
		return 0, fmt.Errorf("the connected role lacks USAGE on schema %s", s.schema)
	case !table:
		return -1, nil
	}
	var v int
	err = q.query(ctx, s.sql(`SELECT coalesce(max(version), 0) FROM backwave.migration`), nil, func(scan scanFunc) error {
		return scan(&v)
	})
	if err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	return v, nil
}

// createVersionTable creates the schema if it is missing and the version
// table in it. Nothing is created that exists, so a role without CREATE on
// the database can migrate a schema an administrator made for it.
func (s *Store) createVersionTable(ctx context.Context, q querier) error {
	var exists bool
	err := q.query(ctx, s.sql(`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'backwave')`), nil, func(scan scanFunc) error {
		return scan(&exists)
	})
	if err != nil {
		return fmt.Errorf("look for schema: %w", err)
	}
	if !exists {
		if _, err := q.exec(ctx, s.sql(`CREATE SCHEMA backwave`)); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	_, err = q.exec(ctx, s.sql(`CREATE TABLE backwave.migration (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    compat     text
)`))
	if err != nil {
		return fmt.Errorf("create the version table: %w", err)
	}
	return nil
}

// ErrSchemaBehind is returned by Open with SkipMigrate when the schema is
// missing or older than this build needs: migrate it first (Migrate, or
// Open without SkipMigrate).
var ErrSchemaBehind = errors.New("postgres: schema is behind this version of BackWave")

// schemaBehind is Open's ErrSchemaBehind: its text says where the schema
// stands and no more, so a caller can add its own way to migrate.
type schemaBehind string

func (e schemaBehind) Error() string        { return string(e) }
func (e schemaBehind) Is(target error) bool { return target == ErrSchemaBehind }

// checkVersion fails unless this build can run on the schema: at
// SchemaVersion, or one n-1-compatible step newer (checkWindow). A schema
// missing or older must be migrated first.
func (s *Store) checkVersion(ctx context.Context) error {
	v, err := s.readVersion(ctx, s.db)
	if err != nil {
		return s.wrap("check schema "+s.schema, err)
	}
	switch want := SchemaVersion(); {
	case v < 0:
		return schemaBehind(fmt.Sprintf("postgres: schema %s has no BackWave tables: it was never migrated", s.schema))
	case v < want:
		return schemaBehind(fmt.Sprintf("postgres: schema %s is at version %d, this build needs %d", s.schema, v, want))
	case v > want:
		if err := s.checkWindow(ctx, s.db, v, want); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
	}
	return nil
}

// checkPrivileges fails, naming what is missing, unless the connected role
// may use the schema and read and write its tables, so that a
// misconfigured role is refused at Open rather than at the first claim.
func (s *Store) checkPrivileges(ctx context.Context) error {
	var missing []string
	// has_*_privilege answers true if any one listed privilege is held, so
	// each privilege is asked about on its own.
	err := s.db.query(ctx, s.sql(`SELECT t.name, p.priv
FROM (VALUES ('backwave', 'USAGE', 'schema'),
             ('backwave.queue', 'SELECT,INSERT,UPDATE', 'table'),
             ('backwave.job', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.job_payload', 'SELECT,INSERT,DELETE', 'table'),
             ('backwave.job_tag', 'SELECT,INSERT,DELETE', 'table'),
             ('backwave.job_transition', 'SELECT,INSERT,DELETE', 'table'),
             ('backwave.schedule', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.schedule_occurrence', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.job_dependency', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.job_count', 'SELECT,INSERT,UPDATE', 'table'),
             ('backwave.job_count_delta', 'SELECT,INSERT,DELETE', 'table'),
             ('backwave.tag', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.audit', 'SELECT,INSERT', 'table'),
             ('backwave.job_unique', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.job_trace', 'SELECT,INSERT,DELETE', 'table'),
             ('backwave.job_progress', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.job_cursor', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.workflow', 'SELECT,INSERT,DELETE', 'table'),
             ('backwave.workflow_count', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.workflow_count_delta', 'SELECT,INSERT,DELETE', 'table'),
             ('backwave.fleet_handler', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.node', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.queue_key', 'SELECT,INSERT,UPDATE,DELETE', 'table'),
             ('backwave.job_key_count', 'SELECT,INSERT,UPDATE', 'table'),
             ('backwave.job_key_count_delta', 'SELECT,INSERT,DELETE', 'table'),
             ('backwave.job_id_seq', 'USAGE', 'sequence')) AS t(name, privs, kind)
CROSS JOIN LATERAL unnest(string_to_array(t.privs, ',')) AS p(priv)
WHERE NOT CASE t.kind
    WHEN 'schema' THEN has_schema_privilege(t.name, p.priv)
    WHEN 'table' THEN has_table_privilege(t.name, p.priv)
    ELSE has_sequence_privilege(t.name, p.priv) END`), nil, func(scan scanFunc) error {
		var name, priv string
		if err := scan(&name, &priv); err != nil {
			return err
		}
		missing = append(missing, priv+" on "+name)
		return nil
	})
	if err != nil {
		return s.wrap("check privileges on schema "+s.schema, err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("postgres: the connected role lacks privileges: %s", strings.Join(missing, "; "))
	}
	return nil
}
