package mariadb

import "context"

// MigrationCount is how many migrations this build embeds: SchemaVersion
// while no version is missing between them.
func MigrationCount() int { return len(migrations()) }

// TakeMySQLPath makes s migrate as on MySQL (guard.go), whatever its
// server; MariaDB accepts both forms of the statements.
func TakeMySQLPath(s *Store) { s.server.MariaDB = false }

// SchemaHas reports whether the table (its full name) has the column
// (kind "COLUMN") or index ("KEY") of that name, from information_schema.
func SchemaHas(s *Store) func(ctx context.Context, table, kind, name string) (bool, error) {
	return schemaHas(s.db)
}

// Exec runs one statement written against the backwave_ prefix, renamed
// to s's Schema Name.
func Exec(ctx context.Context, s *Store, q string) error {
	_, err := s.db.ExecContext(ctx, s.sql.of(q))
	return err
}

// LatestVersion is the newest schema version this build knows.
func LatestVersion() int { return latestVersion() }
