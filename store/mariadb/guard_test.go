package mariadb_test

import (
	"context"
	"testing"

	"github.com/backwave/backwave/store/mariadb"
)

// TestMigrationsWithoutIfNotExists runs the migrations on this server the
// way the store runs them on MySQL (guard.go), over a schema whose newer
// steps were undone in part: the missing columns and index are added by
// the unguarded statements, the existing ones skipped, and a run over the
// complete schema finds everything in place. MariaDB accepts both forms,
// so the MySQL path is exercised here whatever the server.
func TestMigrationsWithoutIfNotExists(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, schema)
	s, err := mariadb.Open(ctx, testURL(t), mariadb.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	exec := func(q string) {
		t.Helper()
		if err := mariadb.Exec(ctx, s, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Undo part of 005, 006 and 008, and forget them.
	exec(`ALTER TABLE backwave_job DROP KEY backwave_job_retrying, DROP COLUMN terminal_cause`)
	exec(`ALTER TABLE backwave_queue DROP COLUMN fair_turn`)
	exec(`DELETE FROM backwave_schema_version WHERE version >= 5`)
	mariadb.TakeMySQLPath(s)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("over the part-undone schema: %v", err)
	}
	// Forget them again, with everything in place: the guard skips it all.
	exec(`DELETE FROM backwave_schema_version WHERE version >= 5`)
	if res, err := s.Migrate(ctx); err != nil || res.Version != mariadb.LatestVersion() {
		t.Fatalf("over the complete schema: %+v, %v", res, err)
	}
	if res, err := s.Migrate(ctx); err != nil || len(res.Applied) != 0 {
		t.Fatalf("a third run applied %v (%v), want nothing", res.Applied, err)
	}
	has := mariadb.SchemaHas(s)
	for _, want := range [][3]string{
		{schema + "job", "COLUMN", "terminal_cause"}, {schema + "job", "KEY", schema + "job_retrying"}, {schema + "queue", "COLUMN", "fair_turn"},
	} {
		if ok, err := has(ctx, want[0], want[1], want[2]); err != nil || !ok {
			t.Errorf("%s %s %s missing after the MySQL-path migration (%v)", want[0], want[1], want[2], err)
		}
	}
}
