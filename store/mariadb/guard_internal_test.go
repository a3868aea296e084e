package mariadb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestGuardAlter: on a server without IF NOT EXISTS on ALTER TABLE's
// clauses, each guarded clause is kept unguarded when its object is
// missing and dropped when it exists; an ALTER left empty is not run; any
// other statement is run as written.
func TestGuardAlter(t *testing.T) {
	t.Parallel()
	const multi = `ALTER TABLE p_job
	ADD COLUMN IF NOT EXISTS concurrency_key VARBINARY(128) NOT NULL DEFAULT '',
	ADD KEY IF NOT EXISTS p_job_key (queue, concurrency_key, state, scheduled_at, id);`
	for _, tc := range []struct {
		name, stmt string
		have       map[string]bool // "table kind name"
		want       string
		run        bool
	}{
		{"nothing there", multi, nil,
			"ALTER TABLE p_job\n\tADD COLUMN concurrency_key VARBINARY(128) NOT NULL DEFAULT '',\n\tADD KEY p_job_key (queue, concurrency_key, state, scheduled_at, id)", true},
		{"the column there", multi, map[string]bool{"p_job COLUMN concurrency_key": true},
			"ALTER TABLE p_job\n\tADD KEY p_job_key (queue, concurrency_key, state, scheduled_at, id)", true},
		{"both there", multi, map[string]bool{"p_job COLUMN concurrency_key": true, "p_job KEY p_job_key": true}, "", false},
		{"a quoted comma", "ALTER TABLE p_q ADD COLUMN IF NOT EXISTS c VARCHAR(8) NOT NULL DEFAULT 'a,b'", nil,
			"ALTER TABLE p_q\n\tADD COLUMN c VARCHAR(8) NOT NULL DEFAULT 'a,b'", true},
		{"unguarded clause kept", "ALTER TABLE p_q MODIFY x INT, ADD INDEX IF NOT EXISTS p_q_x (x)", map[string]bool{"p_q INDEX p_q_x": true},
			"ALTER TABLE p_q\n\tMODIFY x INT", true},
		{"no guard", "ALTER TABLE p_q ADD COLUMN y INT", nil, "ALTER TABLE p_q ADD COLUMN y INT", true},
		{"not an ALTER", "CREATE TABLE IF NOT EXISTS p_n (id INT)", nil, "CREATE TABLE IF NOT EXISTS p_n (id INT)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			has := func(_ context.Context, table, kind, name string) (bool, error) {
				return tc.have[table+" "+kind+" "+name], nil
			}
			got, run, err := guardAlter(context.Background(), tc.stmt, has)
			if err != nil || run != tc.run || (run && got != tc.want) {
				t.Errorf("guardAlter = %q, %v, %v; want %q, %v", got, run, err, tc.want, tc.run)
			}
		})
	}
}

// TestMigrationsWithoutIfNotExists runs the migrations on this server the
// way the store runs them on MySQL (guard.go), over a schema whose newer
// steps were undone in part: the missing column and index are added by
// the unguarded statements, the existing ones skipped, and a second run
// finds everything done. MariaDB accepts both forms, so the MySQL path is
// exercised here whatever the server.
func TestMigrationsWithoutIfNotExists(t *testing.T) {
	t.Parallel()
	url := os.Getenv("BACKWAVE_TEST_MARIADB_URL")
	if url == "" {
		t.Skip("BACKWAVE_TEST_MARIADB_URL is not set: the MySQL migration path needs a server")
	}
	ctx := context.Background()
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	prefix := "bwg" + hex.EncodeToString(b) + "_"
	s, err := Open(ctx, url, Options{Schema: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	t.Cleanup(func() {
		rows, err := s.db.QueryContext(context.Background(), `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ?`, prefix+"%")
		if err != nil {
			return
		}
		var names []string
		for rows.Next() {
			var n string
			if rows.Scan(&n) == nil {
				names = append(names, "`"+n+"`")
			}
		}
		_ = rows.Close()
		if len(names) > 0 {
			_, _ = s.db.ExecContext(context.Background(), "DROP TABLE "+strings.Join(names, ", "))
		}
	})
	exec := func(q string) {
		t.Helper()
		if _, err := s.db.ExecContext(ctx, s.sql.of(q)); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Undo part of 005, 006 and 008, and forget them.
	exec(`ALTER TABLE backwave_job DROP KEY backwave_job_retrying, DROP COLUMN terminal_cause`)
	exec(`ALTER TABLE backwave_queue DROP COLUMN fair_turn`)
	exec(`DELETE FROM backwave_schema_version WHERE version >= 5`)
	s.server.MariaDB = false // the MySQL path
	for run := 1; run <= 2; run++ {
		res, err := s.Migrate(ctx)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if run == 2 && len(res.Applied) != 0 {
			t.Fatalf("run 2 applied %v, want nothing", res.Applied)
		}
		if run == 2 {
			break
		}
		// Forget them again, with everything in place: the guard must skip it all.
		exec(`DELETE FROM backwave_schema_version WHERE version >= 5`)
		if res, err = s.Migrate(ctx); err != nil || res.Version != latestVersion() {
			t.Fatalf("run over a complete schema: %+v, %v", res, err)
		}
	}
	has := schemaHas(s.db)
	for _, want := range [][3]string{
		{"job", "COLUMN", "terminal_cause"}, {"job", "KEY", "retrying"}, {"queue", "COLUMN", "fair_turn"},
	} {
		table, name := prefix+want[0], want[2]
		if want[1] == "KEY" {
			name = prefix + "job_" + want[2]
		}
		ok, err := has(ctx, table, want[1], name)
		if err != nil || !ok {
			t.Errorf("%s %s %s missing after the MySQL-path migration (%v)", table, want[1], name, err)
		}
	}
	var n sql.NullInt64
	if err := s.db.QueryRowContext(ctx, s.sql.of(`SELECT COUNT(*) FROM backwave_job`)).Scan(&n); err != nil {
		t.Fatalf("the job table after the MySQL-path migration: %v", err)
	}
}
