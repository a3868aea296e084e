package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
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

// A store facing a schema newer than it knows refuses it (issue: "a store
// facing a newer schema than it knows refuses clearly"), at Open and at
// Migrate, and changes nothing.
func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	s := openStore(t, modePgx, postgres.Options{})
	conn, err := pgx.Connect(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	future := postgres.SchemaVersion() + 1
	if _, err := conn.Exec(t.Context(), fmt.Sprintf(`INSERT INTO %s.migration (version, name) VALUES ($1, 'from_the_future')`, s.Schema()), future); err != nil {
		t.Fatal(err)
	}
	for _, m := range modes {
		for _, skip := range []bool{false, true} {
			_, err := openErr(t, m, postgres.Options{Schema: s.Schema(), SkipMigrate: skip})
			if !errors.Is(err, store.ErrSchemaTooNew) {
				t.Fatalf("Open (%s, SkipMigrate=%v) on version %d: %v, want ErrSchemaTooNew", m, skip, future, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(future)) {
				t.Errorf("error %q does not name the version found", err)
			}
		}
	}
	if _, err := s.Migrate(t.Context()); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Migrate on version %d: %v, want ErrSchemaTooNew", future, err)
	}
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
