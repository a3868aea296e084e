package sqlite

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A migration's steps commit one by one (migrate_step.go): one interrupted
// at a step is resumed there by the next Migrate, no step runs twice, and
// the version is recorded only with the last step (glossary, In-Place
// Upgrade; Coordinated Migration).
func TestMigrationResumesAtItsStep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "jobs.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	v := latestVersion()
	later := func(second string) []migration {
		m, err := parseMigration(v+1, "stepped", "-- compat: n-1\nCREATE TABLE backwave_step_one (x);\n-- step\n"+second+"\n-- step\nCREATE TABLE backwave_step_three (x);\n")
		if err != nil {
			t.Fatal(err)
		}
		return append(slices.Clone(migrations), m)
	}
	// The second step fails: the first stays applied, the version does not
	// move, and the third never runs.
	if _, err := s.migrate(ctx, later("INSERT INTO backwave_no_such_table VALUES (1);")); err == nil || !strings.Contains(err.Error(), "step 2 of 3") {
		t.Fatalf("Migrate with a failing second step = %v, want its error naming step 2 of 3", err)
	}
	if got, err := s.SchemaVersion(ctx); err != nil || got != v {
		t.Fatalf("version after the interrupted migration = %d, %v; want %d", got, err, v)
	}
	tables := func() []string {
		rows, err := s.w.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'backwave_step_%' ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		var out []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return out
	}
	if got := tables(); !slices.Equal(got, []string{"backwave_step_one"}) {
		t.Fatalf("tables after the interrupted migration: %q, want only step one's", got)
	}
	// Resumed with the step fixed: step one is not applied again (its
	// CREATE TABLE would fail), the rest are, and the version is recorded.
	res, err := s.migrate(ctx, later("CREATE TABLE backwave_step_two (x);"))
	if err != nil {
		t.Fatalf("resumed Migrate: %v", err)
	}
	if res.To != v+1 || len(res.Applied) != 1 {
		t.Fatalf("resumed Migrate = %+v, want version %d applied", res, v+1)
	}
	if got := tables(); !slices.Equal(got, []string{"backwave_step_one", "backwave_step_three", "backwave_step_two"}) {
		t.Fatalf("tables after the resumed migration: %q", got)
	}
	var left int
	if err := s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM backwave_schema_step`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("step rows left after the migration was recorded: %d, %v", left, err)
	}
}

// The shipped 0002 is split into steps: the backfill with its triggers, the
// Tag backfill, each index on the job table, the audit trail.
func TestMigration0002Steps(t *testing.T) {
	t.Parallel()
	steps := migrations[1].steps()
	if migrations[1].version != 2 || len(steps) != 7 {
		t.Fatalf("migration %d has %d steps, want 0002 with 7", migrations[1].version, len(steps))
	}
	if !strings.Contains(steps[0], "CREATE TRIGGER backwave_job_count_insert") || !strings.Contains(steps[0], "INSERT INTO backwave_job_count") {
		t.Errorf("the count backfill and its triggers are not in one step: %q", steps[0])
	}
}
