package mariadb

import (
	"context"
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
