package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/storetest"
)

// Glossary, Coordinated Migration: "only one Node applies it at a time; the
// others block on a database-level lock, then wake, re-check the schema
// version, and find nothing to do." Ten nodes open a fresh schema at once,
// each on its own pool; exactly one applies every migration.
func TestCoordinatedMigration(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			schema := randomSchema(t)
			dropSchemaAtCleanup(t, testURL(t), schema)
			const nodes = 10
			// Each node has its own connections, made before the start so
			// that all ten reach the lock together.
			results := make([]postgres.MigrateResult, nodes)
			errs := make([]error, nodes)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range nodes {
				opts := postgres.Options{Schema: schema}
				switch m {
				case modePgx:
					pool, err := pgxpool.New(t.Context(), testURL(t))
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(pool.Close)
					if err := pool.Ping(t.Context()); err != nil {
						t.Fatal(err)
					}
					wg.Go(func() {
						<-start
						results[i], errs[i] = postgres.MigratePool(t.Context(), pool, opts)
					})
				case modeSQL:
					db := openDB(t, testURL(t))
					if err := db.PingContext(t.Context()); err != nil {
						t.Fatal(err)
					}
					wg.Go(func() {
						<-start
						results[i], errs[i] = postgres.MigrateDB(t.Context(), db, opts)
					})
				}
			}
			close(start)
			wg.Wait()
			var appliers int
			want := allVersions()
			for i := range nodes {
				if errs[i] != nil {
					t.Fatalf("node %d: Migrate: %v", i, errs[i])
				}
				if results[i].Version != postgres.SchemaVersion() {
					t.Errorf("node %d: version %d after Migrate, want %d", i, results[i].Version, postgres.SchemaVersion())
				}
				switch {
				case len(results[i].Applied) == 0:
				case slices.Equal(results[i].Applied, want):
					appliers++
				default:
					t.Errorf("node %d applied %v, want all of %v or nothing", i, results[i].Applied, want)
				}
			}
			if appliers != 1 {
				t.Fatalf("%d nodes applied the migrations, want exactly 1", appliers)
			}
			// A store opens on the result without migrating.
			insert(t, openStore(t, m, postgres.Options{Schema: schema, SkipMigrate: true}), "q", 1)
		})
	}
}

func allVersions() []int { return postgres.MigrationVersions() }

// Migrations of a later build, for the window tests: additive, so this
// build's statements run unchanged on the schema they leave.
const (
	laterN1       = "-- compat: n-1\nALTER TABLE backwave.job ADD COLUMN later_a integer NOT NULL DEFAULT 0;\n"
	laterN1Again  = "-- compat: n-1\nALTER TABLE backwave.job ADD COLUMN later_b text;\n"
	laterBreaking = "-- compat: breaking\nALTER TABLE backwave.job ADD COLUMN later_c integer NOT NULL DEFAULT 0;\n"
)

// Glossary, Mixed-Version Fleet: "Supported at N-1 skew only: nodes one
// release behind must keep working against the upgraded schema; wider skew
// is out of contract." This build plays the node one release behind: a
// later build's migration, applied through the runner, takes the schema one
// n-1 step past SchemaVersion; this build opens it in both modes, with and
// without SkipMigrate, runs jobs on it, and Migrate leaves it as it is.
func TestSchemaWindowOpensOneN1Step(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, modePgx, postgres.Options{})
	v := postgres.SchemaVersion()
	res, err := postgres.MigrateLater(ctx, s, laterN1)
	if err != nil || !slices.Equal(res.Applied, []int{v + 1}) || res.Version != v+1 {
		t.Fatalf("later build's Migrate = %+v, %v; want version %d applied", res, err, v+1)
	}
	for _, m := range modes {
		for _, skip := range []bool{false, true} {
			old := openStore(t, m, postgres.Options{Schema: s.Schema(), SkipMigrate: skip})
			id := insert(t, old, "q", 1)[0]
			jobs, err := old.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: 1, LeaseDuration: time.Minute})
			if err != nil || len(jobs) != 1 || jobs[0].ID != id {
				t.Fatalf("%s, SkipMigrate=%v: claim on version %d = %v, %v", m, skip, v+1, jobs, err)
			}
			out := core.Decide(core.AttemptInfo{Lease: jobs[0].Lease(), MaxAttempts: jobs[0].MaxAttempts}, core.ResultSucceeded, core.RetryPolicy{})
			rep, err := old.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: []store.Outcome{{Outcome: out}}})
			if err != nil || len(rep) != 1 || !rep[0].Applied {
				t.Fatalf("%s, SkipMigrate=%v: report on version %d = %v, %v", m, skip, v+1, rep, err)
			}
			again, err := old.Migrate(ctx)
			if err != nil || len(again.Applied) != 0 || again.Version != v+1 {
				t.Fatalf("%s: this build's Migrate on version %d = %+v, %v; want nothing applied, version kept", m, v+1, again, err)
			}
		}
	}
	var compat string
	conn := connect(t)
	if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT compat FROM %s.migration WHERE version = $1`, s.Schema()), v+1).Scan(&compat); err != nil || compat != "n-1" {
		t.Fatalf("version %d recorded with compat %q (%v), want n-1", v+1, compat, err)
	}
}

// Mixed-Version Fleet: "wider skew is out of contract". Two steps past this
// build, or one step marked breaking, and every way in refuses with
// store.ErrSchemaTooNew, naming the schema's version and this build's, and
// changes nothing.
func TestSchemaWindowRefuses(t *testing.T) {
	t.Parallel()
	v := postgres.SchemaVersion()
	for name, later := range map[string][]string{
		"TwoN1Steps":   {laterN1, laterN1Again},
		"BreakingStep": {laterBreaking},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := openStore(t, modePgx, postgres.Options{})
			if _, err := postgres.MigrateLater(ctx, s, later...); err != nil {
				t.Fatal(err)
			}
			future := v + len(later)
			check := func(what string, err error) {
				t.Helper()
				storetest.CheckSchemaTooNew(t, what, err, future, v)
			}
			for _, m := range modes {
				for _, skip := range []bool{false, true} {
					_, err := openErr(t, m, postgres.Options{Schema: s.Schema(), SkipMigrate: skip})
					check(fmt.Sprintf("Open (%s, SkipMigrate=%v)", m, skip), err)
				}
			}
			_, err := s.Migrate(ctx)
			check("Migrate", err)
			var got int
			if err := connect(t).QueryRow(ctx, fmt.Sprintf(`SELECT max(version) FROM %s.migration`, s.Schema())).Scan(&got); err != nil || got != future {
				t.Fatalf("schema at version %d (%v) after the refusals, want %d untouched", got, err, future)
			}
		})
	}
}

// A schema migrated before compatibility marks were recorded (its version
// table has no compat column) takes the column at its next migration, and
// the marks from then on.
func TestMigrateAddsCompatColumn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, modePgx, postgres.Options{})
	conn := connect(t)
	if _, err := conn.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s.migration DROP COLUMN compat`, s.Schema())); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.MigrateLater(ctx, s, laterN1); err != nil {
		t.Fatal(err)
	}
	var marked string
	v := postgres.SchemaVersion()
	if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT string_agg(version || ':' || coalesce(compat, '-'), ' ' ORDER BY version) FROM %s.migration WHERE version >= $1`, s.Schema()),
		v).Scan(&marked); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d:- %d:n-1", v, v+1); marked != want {
		t.Fatalf("versions recorded as %q, want %q", marked, want)
	}
}

// connect opens a connection to the test database, closed at cleanup.
func connect(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// With SkipMigrate, Open refuses a schema that was never migrated, saying
// what to do, instead of failing at the first claim.
func TestSkipMigrateNeedsSchema(t *testing.T) {
	t.Parallel()
	schema := randomSchema(t)
	_, err := openErr(t, modePgx, postgres.Options{Schema: schema, SkipMigrate: true})
	if err == nil || !strings.Contains(err.Error(), "migrate") {
		t.Fatalf("Open with SkipMigrate on a missing schema: %v, want an error saying to migrate", err)
	}
}

// openErr opens a store and returns the error (closing the store if one
// was opened).
func openErr(t *testing.T, m mode, opts postgres.Options) (*postgres.Store, error) {
	t.Helper()
	var (
		s   *postgres.Store
		err error
	)
	switch m {
	case modePgx:
		s, err = postgres.Open(t.Context(), testURL(t), opts)
	case modeSQL:
		s, err = postgres.OpenDB(t.Context(), openDB(t, testURL(t)), opts)
	}
	if s != nil {
		_ = s.Close()
	}
	return s, err
}
