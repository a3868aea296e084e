package postgres

import (
	"testing"

	"github.com/backwave/backwave/store/storetest"
)

// lintRules are this adapter's facts for the migration lint.
var lintRules = storetest.MigrationRules{IndexStep: "CREATE INDEX CONCURRENTLY IF NOT EXISTS"}

// lintMigration is m as the migration lint reads it.
func lintMigration(m migration) storetest.Migration {
	lm := storetest.Migration{Name: m.name, SQL: m.sql, Compat: string(m.compat), Body: m.body}
	for _, st := range m.steps {
		lm.Steps = append(lm.Steps, st.sql)
	}
	return lm
}

// lintParse reads a sample migration as the runner does.
func lintParse(text string) (storetest.Migration, error) {
	m, err := parseMigration(9, "009_sample", text)
	return lintMigration(m), err
}

// Glossary, Schema Re-baseline: "After the first release, additive-first
// binds"; Mixed-Version Fleet: "nodes one release behind must keep working
// against the upgraded schema". Every shipped migration carries its
// compatibility mark, and those marked n-1 are additive.
func TestMigrationsAdditive(t *testing.T) {
	t.Parallel()
	var ms []storetest.Migration
	for _, m := range migrations() {
		ms = append(ms, lintMigration(m))
	}
	storetest.CheckMigrations(t, ms, lintRules)
}

// The lint refuses what would break a node one release behind or block the
// job tables for an index build, and passes the additive shapes.
func TestMigrationLintCatches(t *testing.T) {
	t.Parallel()
	storetest.CheckLint(t, lintRules, lintParse, []string{
		"ALTER TABLE backwave.job ADD COLUMN x integer NOT NULL DEFAULT 0;",
		"ALTER TABLE backwave.job ADD COLUMN x text;",
		"ALTER TABLE backwave.job ALTER COLUMN worker DROP NOT NULL;",
		"CREATE TABLE backwave.t (a int NOT NULL); CREATE UNIQUE INDEX t_a ON backwave.t (a);",
		"CREATE FUNCTION backwave.f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DELETE FROM backwave.job; RETURN NULL; END $$;",
		"UPDATE backwave.job SET retry_cause = '' WHERE retry_cause IS NULL;",
		"CREATE INDEX CONCURRENTLY IF NOT EXISTS job_wire ON backwave.job (wire_name);",
		"CREATE TABLE backwave.t (a int);\nCREATE INDEX t_a ON backwave.t (a);\nCREATE INDEX CONCURRENTLY IF NOT EXISTS job_wire ON backwave.job (wire_name)\n    WHERE state = 'scheduled';",
	}, []string{
		"CREATE INDEX job_wire ON backwave.job (wire_name);",
		"CREATE INDEX IF NOT EXISTS job_wire ON backwave.job (wire_name);",
		"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS job_wire ON backwave.job (wire_name);",
		"CREATE INDEX CONCURRENTLY job_wire ON backwave.job (wire_name);",
		"CREATE INDEX CONCURRENTLY IF NOT EXISTS job_wire ON backwave.job (wire_name);\nALTER TABLE backwave.job ADD COLUMN x text;",
		"ALTER TABLE backwave.job DROP COLUMN output;",
		"ALTER TABLE backwave.job DROP output;",
		"DROP TABLE backwave.job_tag;",
		"DROP INDEX backwave.job_finalized;",
		"ALTER TABLE backwave.job RENAME COLUMN worker TO owner;",
		"ALTER TABLE backwave.job RENAME TO jobs;",
		"ALTER TABLE backwave.job ALTER COLUMN attempt TYPE bigint;",
		"ALTER TABLE backwave.job ALTER attempt SET DATA TYPE bigint;",
		"ALTER TABLE backwave.job ADD COLUMN x integer NOT NULL;",
		"ALTER TABLE backwave.job ADD COLUMN x integer DEFAULT 0, ADD COLUMN y text NOT NULL;",
		"ALTER TABLE backwave.job ALTER COLUMN output SET NOT NULL;",
		"ALTER TABLE backwave.job ALTER COLUMN attempt DROP DEFAULT;",
		"ALTER TABLE backwave.job ADD CONSTRAINT c CHECK (attempt < 100);",
		"ALTER TABLE backwave.job ADD COLUMN x uuid DEFAULT gen_random_uuid();",
		"CREATE UNIQUE INDEX j ON backwave.job (wire_name);",
		"DELETE FROM backwave.job_transition;",
		"TRUNCATE backwave.audit;",
	})
	for _, text := range []string{"CREATE TABLE backwave.t (a int);", "-- compat: later\nCREATE TABLE backwave.t (a int);"} {
		if _, err := parseMigration(9, "009_unmarked", text); err == nil {
			t.Errorf("parseMigration accepted a migration without a valid compat line:\n%s", text)
		}
	}
}
