package mariadb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backwave/backwave/store"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// migration is one embedded migration file: NNN_name.sql.
type migration struct {
	version int
	name    string
	compat  string
	// statements are the file's statements in order.
	statements []string
}

// migrations returns the embedded migrations in version order. Versions
// rise from 1; one may be missing while the features that own the numbers
// between are built on separate branches, and Migrate applies every
// migration above the recorded version.
func migrations() []migration {
	entries, err := fs.ReadDir(migrationFS, "migration")
	if err != nil {
		panic(fmt.Sprintf("mariadb: read embedded migrations: %v", err))
	}
	var out []migration
	for _, e := range entries {
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic(fmt.Sprintf("mariadb: migration file %s is not NNN_name.sql", e.Name()))
		}
		text, err := migrationFS.ReadFile("migration/" + e.Name())
		if err != nil {
			panic(fmt.Sprintf("mariadb: read migration %s: %v", e.Name(), err))
		}
		m := migration{version: v, name: name, statements: statements(string(text))}
		first, _, _ := strings.Cut(string(text), "\n")
		m.compat = strings.TrimSpace(strings.TrimPrefix(first, "-- compat:"))
		if m.compat == first {
			panic(fmt.Sprintf("mariadb: migration %s has no compat header", e.Name()))
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	// Versions start at 1 and only go up; a version may be left unused (as
	// in the PostgreSQL adapter), and a schema records the versions it
	// applied, so Migrate applies every migration above the recorded one.
	for i, m := range out {
		if (i == 0 && m.version != 1) || (i > 0 && m.version <= out[i-1].version) {
			panic(fmt.Sprintf("mariadb: migration %03d_%s is out of order", m.version, m.name))
		}
	}
	return out
}

// statements splits a migration's text at semicolons ending a line,
// dropping comment lines.
func statements(text string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	return out
}

// latestVersion is the newest schema version this build knows.
func latestVersion() int {
	all := migrations()
	return all[len(all)-1].version
}

// SchemaVersion is the schema version this build migrates to.
func SchemaVersion() int { return latestVersion() }

// MigrateResult reports what one Migrate call did.
type MigrateResult struct {
	// From is the schema version before the call (0 for a schema that did
	// not exist).
	From int
	// Applied lists the versions this call applied, in order; empty when
	// the schema was already current.
	Applied []int
	// Version is the schema version after the call.
	Version int
}

// migrateLockWait bounds how long Migrate waits for another migrator.
const migrateLockWait = 10 * time.Minute

// Migrate brings the store's schema up to SchemaVersion under Coordinated
// Migration: the whole call holds GET_LOCK on a name derived from the
// database and the Schema Name, so of many nodes migrating at once one
// applies the changes and the others wait, re-read the version and find
// nothing to do. It never migrates down: a schema one n-1-compatible step
// newer is left as it is, and a wider skew fails with an error wrapping
// store.ErrSchemaTooNew.
//
// MySQL and MariaDB commit every DDL statement on its own (no
// transactional DDL), so a migration's statements are written to be run
// again (CREATE TABLE IF NOT EXISTS, INSERT IGNORE): one interrupted
// half-way is finished by the next Migrate, and its version row is written
// last.
func (s *Store) Migrate(ctx context.Context) (MigrateResult, error) {
	if err := s.ready(ctx); err != nil {
		return MigrateResult{}, err
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("mariadb: migrate: %w", err)
	}
	defer func() { _ = conn.Close() }()
	lock, err := s.lockName(ctx, conn)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("mariadb: migrate: %w", err)
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", lock, int(migrateLockWait/time.Second)).Scan(&got); err != nil {
		return MigrateResult{}, fmt.Errorf("mariadb: migrate: take the migration lock %s: %w", lock, err)
	}
	if !got.Valid || got.Int64 != 1 {
		return MigrateResult{}, fmt.Errorf("mariadb: migrate: another migrator held the lock %s for %v", lock, migrateLockWait)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", lock)
	}()
	return s.applyMigrations(ctx, conn)
}

// lockName is the GET_LOCK name of the store's migrations: one per
// database and Schema Name, within the server's 64-character bound.
func (s *Store) lockName(ctx context.Context, conn *sql.Conn) (string, error) {
	var dbName sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbName); err != nil {
		return "", err
	}
	if !dbName.Valid {
		return "", errors.New("the connection has no database selected")
	}
	sum := sha256.Sum256([]byte(dbName.String + "\x00" + s.prefix))
	return "backwave_migrate_" + hex.EncodeToString(sum[:16]), nil
}

func (s *Store) applyMigrations(ctx context.Context, raw querier) (MigrateResult, error) {
	q := renamed{raw, s.sql}
	if err := s.createVersionTable(ctx, q); err != nil {
		return MigrateResult{}, fmt.Errorf("mariadb: migrate: %w", err)
	}
	v, err := s.readVersion(ctx, q)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("mariadb: migrate: %w", err)
	}
	res := MigrateResult{From: v, Version: v}
	all := migrations()
	if latest := all[len(all)-1].version; v > latest {
		if err := s.checkWindow(ctx, v, latest); err != nil {
			return res, err
		}
		return res, nil
	}
	for _, m := range all {
		if m.version <= v {
			continue
		}
		for _, st := range m.statements {
			st := s.sql.of(st)
			if !s.server.MariaDB { // MySQL: no IF NOT EXISTS on ALTER TABLE's clauses (guard.go)
				var run bool
				var err error
				if st, run, err = guardAlter(ctx, st, schemaHas(raw)); err != nil {
					return res, fmt.Errorf("mariadb: migrate: %03d_%s: %w", m.version, m.name, err)
				}
				if !run {
					continue
				}
			}
			if _, err := raw.ExecContext(ctx, st); err != nil {
				return res, fmt.Errorf("mariadb: migrate: %03d_%s: %w", m.version, m.name, err)
			}
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO backwave_schema_version (version, name, compat, applied_at) VALUES (?, ?, ?, ?)`,
			m.version, m.name, m.compat, time.Now().UnixMicro()); err != nil {
			return res, fmt.Errorf("mariadb: migrate: record %03d_%s: %w", m.version, m.name, err)
		}
		res.Applied = append(res.Applied, m.version)
		res.Version = m.version
	}
	return res, nil
}

func (s *Store) createVersionTable(ctx context.Context, q querier) error {
	_, err := q.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS backwave_schema_version (
	version    INT          NOT NULL PRIMARY KEY,
	name       VARCHAR(200) NOT NULL,
	compat     VARCHAR(40)  NOT NULL,
	applied_at BIGINT       NOT NULL
) ENGINE=InnoDB`)
	return err
}

// readVersion reads the schema version, 0 when there is no version table.
func (s *Store) readVersion(ctx context.Context, q querier) (int, error) {
	var v sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT MAX(version) FROM backwave_schema_version`).Scan(&v)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1146 { // no such table
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	return int(v.Int64), nil
}

// SchemaVersion reads the version the database's schema is at (0: none).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return s.readVersion(ctx, renamed{s.db, s.sql})
}

// checkWindow refuses a schema newer than this build by more than one
// n-1-compatible migration (store.CheckSchemaWindow).
func (s *Store) checkWindow(ctx context.Context, current, latest int) error {
	rows, err := s.db.QueryContext(ctx, s.sql.of(`SELECT version, CONCAT(LPAD(version, 3, '0'), '_', name), compat
	FROM backwave_schema_version WHERE version > ? ORDER BY version`), latest)
	if err != nil {
		return fmt.Errorf("mariadb: read the migrations newer than this build: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var newer []store.SchemaStep
	for rows.Next() {
		var st store.SchemaStep
		if err := rows.Scan(&st.Version, &st.Name, &st.Compat); err != nil {
			return fmt.Errorf("mariadb: read the migrations newer than this build: %w", err)
		}
		newer = append(newer, st)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("mariadb: read the migrations newer than this build: %w", err)
	}
	if err := store.CheckSchemaWindow(fmt.Sprintf("%q", s.prefix), current, latest, newer); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	return nil
}

// Migrate opens the database dsn names (a DSN or a mariadb:// or mysql://
// URI without the store's own parameters), brings the schema opts.Schema
// up to date as Store.Migrate does, and closes it: the separate deploy
// step of a fleet that opens its stores with Options.ManualMigrate.
func Migrate(ctx context.Context, dsn string, opts Options) (MigrateResult, error) {
	opts.ManualMigrate = true
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return MigrateResult{}, err
	}
	opts, err = opts.withDefaults()
	if err != nil {
		return MigrateResult{}, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("mariadb: migrate: %w", err)
	}
	db := sqlOpenDB(connector)
	defer func() { _ = db.Close() }()
	s := &Store{db: db, ownDB: true, opts: opts, prefix: opts.Schema, sql: newRenamer(opts.Schema)}
	if s.server, err = checkServer(ctx, db); err != nil {
		return MigrateResult{}, err
	}
	return s.Migrate(ctx)
}
