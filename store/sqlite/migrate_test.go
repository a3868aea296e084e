package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/storetest"
)

// Migrations of a later build, for the window tests: additive, so this
// build's statements run unchanged on the schema they leave.
const (
	laterN1       = "-- compat: n-1\nALTER TABLE backwave_job ADD COLUMN later_a INTEGER NOT NULL DEFAULT 0;\n"
	laterN1Again  = "-- compat: n-1\nALTER TABLE backwave_job ADD COLUMN later_b TEXT;\n"
	laterBreaking = "-- compat: breaking\nALTER TABLE backwave_job ADD COLUMN later_c INTEGER NOT NULL DEFAULT 0;\n"
)

// migrateLater migrates s as a later build would: the shipped migrations,
// then each of later (the text of one migration file), numbered from
// latestVersion()+1.
func migrateLater(t *testing.T, s *Store, later ...string) MigrateResult {
	t.Helper()
	all := slices.Clone(migrations)
	for _, text := range later {
		v := all[len(all)-1].version + 1
		m, err := parseMigration(v, "later_build", text)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, m)
	}
	res, err := s.migrate(t.Context(), all)
	if err != nil {
		t.Fatalf("later build's Migrate: %v", err)
	}
	return res
}

// Glossary, Mixed-Version Fleet: "Supported at N-1 skew only: nodes one
// release behind must keep working against the upgraded schema; wider skew
// is out of contract." This build plays the node one release behind: a
// later build's migration, applied through the runner, takes the file one
// n-1 step past latestVersion; this build opens it, with and without
// ManualMigrate, runs a job on it, and Migrate leaves it as it is.
func TestSchemaWindowOpensOneN1Step(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := latestVersion()
	if res := migrateLater(t, s, laterN1); res.From != v || res.To != v+1 || len(res.Applied) != 1 {
		t.Fatalf("later build's Migrate = %+v, want version %d applied", res, v+1)
	}
	_ = s.Close()
	for _, manual := range []bool{false, true} {
		old, err := Open(ctx, path, Options{ManualMigrate: manual})
		if err != nil {
			t.Fatalf("Open(ManualMigrate=%v) on version %d: %v", manual, v+1, err)
		}
		ids, err := old.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := old.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: 1, LeaseDuration: time.Minute})
		if err != nil || len(jobs) != 1 || jobs[0].ID != ids[0] {
			t.Fatalf("claim on version %d = %v, %v", v+1, jobs, err)
		}
		out := core.Decide(core.AttemptInfo{Lease: jobs[0].Lease(), MaxAttempts: 1}, core.ResultSucceeded, core.RetryPolicy{})
		rep, err := old.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: []store.Outcome{{Outcome: out}}})
		if err != nil || len(rep) != 1 || !rep[0].Applied {
			t.Fatalf("report on version %d = %v, %v", v+1, rep, err)
		}
		if drift, err := CountsDrift(ctx, old); err != nil || drift != "" {
			t.Fatalf("counts on version %d: %q, %v", v+1, drift, err)
		}
		res, err := old.Migrate(ctx)
		if err != nil || len(res.Applied) != 0 || res.From != v+1 || res.To != v+1 {
			t.Fatalf("this build's Migrate on version %d = %+v, %v; want nothing applied, version kept", v+1, res, err)
		}
		_ = old.Close()
	}
}

// Mixed-Version Fleet: "wider skew is out of contract". Two steps past this
// build, or one step marked breaking, and Open and Migrate refuse with
// store.ErrSchemaTooNew on one line naming the file's version and this
// build's, and change nothing.
func TestSchemaWindowRefuses(t *testing.T) {
	t.Parallel()
	v := latestVersion()
	for name, later := range map[string][]string{
		"TwoN1Steps":   {laterN1, laterN1Again},
		"BreakingStep": {laterBreaking},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "jobs.db")
			s, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			migrateLater(t, s, later...)
			future := v + len(later)
			check := func(what string, err error) {
				t.Helper()
				storetest.CheckSchemaTooNew(t, what, err, future, v)
			}
			_, err = s.Migrate(ctx)
			check("Migrate", err)
			for _, manual := range []bool{false, true} {
				_, err := Open(ctx, path, Options{ManualMigrate: manual})
				check(fmt.Sprintf("Open(ManualMigrate=%v)", manual), err)
			}
			if got, err := s.SchemaVersion(ctx); err != nil || got != future {
				t.Fatalf("schema at version %d (%v) after the refusals, want %d untouched", got, err, future)
			}
		})
	}
}

// A file migrated before compatibility marks were recorded (its versions
// table has no compat column) takes the column at its next migration, and
// the marks from then on.
func TestMigrateAddsCompatColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "jobs.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if _, err := s.w.ExecContext(ctx, `ALTER TABLE backwave_schema_version DROP COLUMN compat`); err != nil {
		t.Fatal(err)
	}
	migrateLater(t, s, laterN1)
	var marked string
	if err := s.w.QueryRowContext(ctx, `SELECT group_concat(version || ':' || COALESCE(compat, '-'), ' ') FROM backwave_schema_version WHERE version >= ?`,
		latestVersion()).Scan(&marked); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d:- %d:n-1", latestVersion(), latestVersion()+1); marked != want {
		t.Fatalf("versions recorded as %q, want %q", marked, want)
	}
}

// lintRules are this adapter's facts for the migration lint: SQLite has no
// index build that lets writers through, so there are no index steps.
var lintRules = storetest.MigrationRules{}

// lintMigration is m as the migration lint reads it: every statement runs
// in the migration's transaction.
func lintMigration(m migration) storetest.Migration {
	return storetest.Migration{Name: fmt.Sprintf("%04d_%s", m.version, m.name), SQL: m.sql, Compat: string(m.compat), Body: m.sql}
}

// lintParse reads a sample migration as the runner does.
func lintParse(text string) (storetest.Migration, error) {
	m, err := parseMigration(9, "sample", text)
	return lintMigration(m), err
}

// Glossary, Schema Re-baseline: "After the first release, additive-first
// binds"; Mixed-Version Fleet: "nodes one release behind must keep working
// against the upgraded schema". Every shipped migration carries its
// compatibility mark, and those marked n-1 are additive.
func TestMigrationsAdditive(t *testing.T) {
	t.Parallel()
	var ms []storetest.Migration
	for _, m := range migrations {
		ms = append(ms, lintMigration(m))
	}
	storetest.CheckMigrations(t, ms, lintRules)
}

// The lint refuses what would break a node one release behind, SQLite's
// table rebuild included, and passes the additive shapes, a replaced
// trigger included.
func TestMigrationLintCatches(t *testing.T) {
	t.Parallel()
	storetest.CheckLint(t, lintRules, lintParse, []string{
		"ALTER TABLE backwave_job ADD COLUMN x INTEGER NOT NULL DEFAULT 0;",
		"CREATE TABLE backwave_t (a INTEGER NOT NULL); CREATE UNIQUE INDEX backwave_t_a ON backwave_t (a);",
		"DROP TRIGGER backwave_job_count_insert; CREATE TRIGGER backwave_job_count_insert AFTER INSERT ON backwave_job BEGIN DELETE FROM backwave_job_count; END;",
	}, []string{
		"DROP TRIGGER backwave_job_count_insert;",
		"ALTER TABLE backwave_job DROP COLUMN cancel_requested;",
		"ALTER TABLE backwave_job ADD COLUMN x INTEGER NOT NULL;",
		"ALTER TABLE backwave_job RENAME COLUMN worker TO owner;",
		"CREATE TABLE backwave_job_new (id INTEGER PRIMARY KEY); INSERT INTO backwave_job_new SELECT id FROM backwave_job; DROP TABLE backwave_job; ALTER TABLE backwave_job_new RENAME TO backwave_job;",
		"CREATE UNIQUE INDEX backwave_job_wire ON backwave_job (wire_name);",
		"DELETE FROM backwave_audit;",
	})
	for _, text := range []string{"CREATE TABLE backwave_t (a INTEGER);", "-- compat: later\nCREATE TABLE backwave_t (a INTEGER);"} {
		if _, err := parseMigration(9, "unmarked", text); err == nil {
			t.Errorf("parseMigration accepted a migration without a valid compat line:\n%s", text)
		}
	}
}

// 0012_unique_live marks the holders of while-live keys held when it runs,
// so a job that took its key on schema 11 still frees it when it ends on
// schema 12, and a job inserted after the migration is marked by the key
// table's triggers.
func TestMigrateUniqueLiveMarksHeldKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := connect(filepath.Join(t.TempDir(), "jobs.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	at := slices.IndexFunc(migrations, func(m migration) bool { return m.version == 12 })
	if at < 0 {
		t.Fatal("no migration 12")
	}
	if _, err := s.migrate(ctx, migrations[:at]); err != nil {
		t.Fatal(err)
	}
	insert := func(key string) store.InsertResult {
		t.Helper()
		res, err := s.JobInsertManyResults(ctx, store.InsertManyParams{Jobs: []store.NewJob{{
			WireName: "w", Queue: "q", MaxAttempts: 1, Unique: store.Unique{Key: key, Scope: store.UniqueWhileLive},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	before := insert("before")
	if _, err := s.migrate(ctx, migrations); err != nil {
		t.Fatal(err)
	}
	after := insert("after")
	claimed, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: 10, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claimed %d jobs (%v), want 2", len(claimed), err)
	}
	var outs []store.Outcome
	for _, j := range claimed {
		outs = append(outs, store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}, core.ResultSucceeded, core.DefaultRetryPolicy())})
	}
	if _, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: outs}); err != nil {
		t.Fatal(err)
	}
	for key, first := range map[string]store.InsertResult{"before": before, "after": after} {
		if again := insert(key); !again.Inserted || again.ID == first.ID {
			t.Errorf("key %q after its holder %d succeeded: inserted %v as %d, want a new job", key, first.ID, again.Inserted, again.ID)
		}
	}
}
