package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/backwave/backwave/store"
)

// schemaName is a validated Schema Name: the table-name prefix.
type schemaName string

// maxSchemaLen bounds a Schema Name, in bytes.
const maxSchemaLen = 40

// ValidateSchema reports whether name can be a Schema Name: 1 to 40 bytes of
// ASCII letters, digits and underscores, not starting with a digit. The
// error wraps store.ErrInvalidParams.
func ValidateSchema(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("sqlite: %w: schema name %s %s", store.ErrInvalidParams, store.Echo(name), why)
	}
	switch {
	case name == "":
		return bad("is empty")
	case len(name) > maxSchemaLen:
		return bad("is longer than " + strconv.Itoa(maxSchemaLen) + " bytes")
	case name[0] >= '0' && name[0] <= '9':
		return bad("starts with a digit")
	}
	for _, c := range []byte(name) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return bad("may hold only letters, digits and underscores")
		}
	}
	if err := store.CheckSchemaName(name); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}

// Rename is the one choke point between the SQL this package is written in
// and the SQL it runs: every statement and migration names its tables with
// the literal prefix "backwave_", and Rename replaces it with the Schema
// Name. With the default Schema Name it returns text unchanged, so the
// default emits byte-identical SQL.
func (n schemaName) Rename(text string) string {
	if n == DefaultSchema {
		return text
	}
	return strings.ReplaceAll(text, DefaultSchema, string(n))
}

//go:embed migrations/*.sql
var migrationFS embed.FS

// compat is a migration's compatibility mark: whether code one release
// behind (N-1) can run on the schema the migration leaves. See the package
// documentation, Mixed-Version Fleet.
type compat string

const (
	// compatN1: additive; a node one release behind keeps working.
	compatN1 compat = "n-1"
	// compatBreaking: a node one release behind must not open the schema.
	compatBreaking compat = "breaking"
)

// compatHeader is a migration's compatibility mark, one line of its text.
var compatHeader = regexp.MustCompile(`(?m)^-- compat: (\S*)[ \t]*$`)

// migration is one embedded schema change.
type migration struct {
	version int
	name    string
	compat  compat
	sql     string
}

// parseMigration reads one migration's text and its compatibility mark
// (one header line "-- compat: n-1" or "-- compat: breaking").
func parseMigration(version int, name, text string) (migration, error) {
	m := migration{version: version, name: name, sql: text}
	marks := compatHeader.FindAllStringSubmatch(text, -1)
	if len(marks) != 1 {
		return m, fmt.Errorf("migration %04d_%s has %d \"-- compat:\" lines, want one", version, name, len(marks))
	}
	switch c := compat(marks[0][1]); c {
	case compatN1, compatBreaking:
		m.compat = c
	default:
		return m, fmt.Errorf("migration %04d_%s: compat %q, want %q or %q", version, name, c, compatN1, compatBreaking)
	}
	return m, nil
}

// migrations lists the embedded migrations in version order. File names are
// NNNN_name.sql with versions rising from 1; anything else is a bug in this
// package's build. (A version may be missing while the features that own
// the numbers between are built on separate branches; Migrate applies every
// migration above the recorded version.)
var migrations = func() []migration {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		panic(fmt.Sprintf("sqlite: read embedded migrations: %v", err))
	}
	var out []migration
	for i, e := range entries {
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 || (i == 0 && v != 1) || (i > 0 && v <= out[i-1].version) {
			panic(fmt.Sprintf("sqlite: embedded migration %q is out of order", e.Name()))
		}
		text, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			panic(fmt.Sprintf("sqlite: read embedded migration %s: %v", e.Name(), err))
		}
		m, err := parseMigration(v, name, string(text))
		if err != nil {
			panic("sqlite: embedded " + err.Error())
		}
		out = append(out, m)
	}
	return out
}()

// latestVersion is the schema version this build knows.
func latestVersion() int { return migrations[len(migrations)-1].version }

// LatestSchemaVersion is the schema version this build of the package
// migrates to.
func LatestSchemaVersion() int { return latestVersion() }

// versionsTable is created by Migrate before any migration runs. compat is
// the mark of the migration (NULL in rows recorded before marks were).
const versionsTable = `CREATE TABLE IF NOT EXISTS backwave_schema_version (
	version    INTEGER PRIMARY KEY,
	name       TEXT    NOT NULL,
	applied_at INTEGER NOT NULL,
	compat     TEXT
)`

// SchemaVersion returns the version of the schema in the database: 0 for a
// database BackWave has never migrated.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	var v int
	err := s.busyRetry(ctx, func() error {
		var err error
		v, err = schemaVersion(ctx, s.r, s.schema)
		return err
	})
	return v, err
}

// querier is what both *sql.DB and *sql.Tx offer.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func schemaVersion(ctx context.Context, q querier, n schemaName) (int, error) {
	var exists int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`,
		n.Rename("backwave_schema_version")).Scan(&exists)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if exists == 0 {
		return 0, nil
	}
	var v int
	if err := q.QueryRowContext(ctx, n.Rename(`SELECT COALESCE(MAX(version), 0) FROM backwave_schema_version`)).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// MigrateResult reports what one Migrate call did.
type MigrateResult struct {
	// From and To are the schema versions before and after the call.
	From, To int
	// Applied lists the migrations this call applied, as "0001_init";
	// empty when the schema was already current.
	Applied []string
}

// Migrate brings the schema up to the latest version this build knows, in
// one write transaction: it takes the file's write lock (BEGIN IMMEDIATE),
// reads the version, applies every missing migration and records it. That
// is the Coordinated Migration of the Embedded Adapter: concurrent
// migrators, in this process or any other on the host, queue on the lock;
// each one after the first re-checks the version and finds nothing to do.
// Migrate is idempotent and never migrates down: a schema one
// n-1-compatible step newer than this build is left as it is (From and To
// report it), and a wider skew, or a newer step marked breaking, fails with
// an error wrapping store.ErrSchemaTooNew that names both versions, and
// changes nothing.
func (s *Store) Migrate(ctx context.Context) (MigrateResult, error) {
	return s.migrate(ctx, migrations)
}

// addCompatColumn adds the compat column to a versions table made before
// compatibility marks were recorded.
func addCompatColumn(ctx context.Context, tx *sql.Tx, n schemaName) error {
	var has int
	err := tx.QueryRowContext(ctx, n.Rename(`SELECT COUNT(*) FROM pragma_table_info('backwave_schema_version') WHERE name = 'compat'`)).Scan(&has)
	if err != nil {
		return fmt.Errorf("look for the compat column: %w", err)
	}
	if has == 0 {
		if _, err := tx.ExecContext(ctx, n.Rename(`ALTER TABLE backwave_schema_version ADD COLUMN compat TEXT`)); err != nil {
			return fmt.Errorf("add the compat column to the versions table: %w", err)
		}
	}
	return nil
}

// checkWindow decides whether a build that knows schema versions up to
// latest may run on a schema at current > latest: only if exactly one
// migration is recorded above latest and it is marked n-1. Otherwise the
// error wraps store.ErrSchemaTooNew.
func checkWindow(ctx context.Context, q querier, n schemaName, current, latest int) error {
	rows, err := q.QueryContext(ctx, n.Rename(`SELECT version, version || '_' || name, COALESCE(compat, '')
FROM backwave_schema_version WHERE version > ? ORDER BY version`), latest)
	if err != nil {
		return fmt.Errorf("read the migrations newer than this build: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var newer []store.SchemaStep
	for rows.Next() {
		var st store.SchemaStep
		if err := rows.Scan(&st.Version, &st.Name, &st.Compat); err != nil {
			return fmt.Errorf("read the migrations newer than this build: %w", err)
		}
		newer = append(newer, st)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the migrations newer than this build: %w", err)
	}
	return store.CheckSchemaWindow(fmt.Sprintf("%q", n), current, latest, newer)
}

// Migrate opens the database at path, brings the schema opts.Schema up to
// date as Store.Migrate does, and closes it: the separate deploy step of a
// fleet that opens its stores with Options.ManualMigrate. It checks path
// the way Open does. (The Embedded Adapter needs no opt-out from
// Coordinated Migration: its only lock is the write transaction every
// migration needs anyway.)
func Migrate(ctx context.Context, path string, opts Options) (MigrateResult, error) {
	s, err := connect(path, opts)
	if err != nil {
		return MigrateResult{}, err
	}
	defer func() { _ = s.Close() }()
	if err := s.busyRetry(ctx, func() error { return s.w.PingContext(ctx) }); err != nil {
		return MigrateResult{}, openError(path, err)
	}
	res, err := s.Migrate(ctx)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return res, nil
}
