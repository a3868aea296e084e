package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// indexState reports whether index exists in schema and is valid, and its
// definition.
func indexState(t *testing.T, schema, index string) (exists, valid bool, def string) {
	t.Helper()
	rows, err := connect(t).Query(t.Context(), `SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2`, schema, index)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		exists = true
		if err := rows.Scan(&valid, &def); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return exists, valid, def
}

// Glossary, In-Place Upgrade: "Upgrading BackWave's schema on a live
// database while jobs remain in flight". An index step interrupted after
// its migration committed — the index missing, or left INVALID by a
// CREATE INDEX CONCURRENTLY that failed — is finished by the next Migrate,
// in either connection mode.
func TestMigrateResumesIndexSteps(t *testing.T) {
	t.Parallel()
	// A later build's migration whose one statement is an index step: the
	// steps finished are those of the migration the schema is at.
	const index = "job_dependency_later"
	const later = "-- compat: n-1\nCREATE INDEX CONCURRENTLY IF NOT EXISTS " + index + " ON backwave.job_dependency (parent_id) WHERE (NOT counted);\n"
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := openStore(t, m, postgres.Options{})
			if res, err := postgres.MigrateLater(ctx, s, later); err != nil || len(res.Applied) != 1 || !slices.Equal(res.Built, []string{index}) {
				t.Fatalf("MigrateLater = %+v, %v; want the later migration applied and %s built", res, err, index)
			}
			conn := connect(t)
			exec := func(sql string) error {
				_, err := conn.Exec(ctx, strings.ReplaceAll(sql, "S.", s.Schema()+"."))
				return err
			}
			wantBuilt := func() {
				t.Helper()
				res, err := postgres.MigrateLater(ctx, s, later)
				if err != nil || len(res.Applied) != 0 || !slices.Equal(res.Built, []string{index}) {
					t.Fatalf("Migrate = %+v, %v; want %s built and nothing applied", res, err, index)
				}
				exists, valid, def := indexState(t, s.Schema(), index)
				if !exists || !valid || strings.Contains(def, "UNIQUE") || !strings.Contains(def, "WHERE (NOT counted)") {
					t.Fatalf("after Migrate %s: exists %v, valid %v, %s", index, exists, valid, def)
				}
			}

			// Missing: the process died before the build began.
			if err := exec(`DROP INDEX S.` + index); err != nil {
				t.Fatal(err)
			}
			wantBuilt()

			// INVALID: the build failed half-way. A unique build over
			// duplicate rows fails the same way and leaves its index INVALID.
			if err := exec(`DROP INDEX S.` + index); err != nil {
				t.Fatal(err)
			}
			if err := exec(`INSERT INTO S.job_dependency (job_id, parent_id, mode) VALUES (2, 1, 'on_success'), (3, 1, 'on_success')`); err != nil {
				t.Fatal(err)
			}
			if err := exec(`CREATE UNIQUE INDEX CONCURRENTLY ` + index + ` ON S.job_dependency (mode)`); err == nil {
				t.Fatal("a unique index over duplicates was built")
			}
			if exists, valid, _ := indexState(t, s.Schema(), index); !exists || valid {
				t.Fatalf("after a failed build: exists %v, valid %v; want an INVALID index", exists, valid)
			}
			wantBuilt()

			// Whole: nothing to do.
			if res, err := postgres.MigrateLater(ctx, s, later); err != nil || len(res.Built) != 0 {
				t.Fatalf("Migrate on a whole schema = %+v, %v; want nothing built", res, err)
			}
		})
	}
}

// A later build's migration with an index step on the job table: the step
// is built CONCURRENTLY after the migration's transaction commits, while
// other nodes migrating at the same moment wait for the Coordinated
// Migration lock without making the build wait for them. (A waiter blocked
// inside pg_advisory_lock holds a snapshot, which CREATE INDEX CONCURRENTLY
// waits out: the build and the waiter would deadlock.)
func TestMigrateIndexStepWithWaiters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, modePgx, postgres.Options{})
	if _, err := connect(t).Exec(ctx, fmt.Sprintf(`INSERT INTO %s.job (queue, wire_name, state, max_attempts, scheduled_at, created_at)
SELECT 'q', 'w' || (g %% 50), 'scheduled', 1, now(), now() FROM generate_series(1, 100000) g`, s.Schema())); err != nil {
		t.Fatal(err)
	}
	const later = "-- compat: n-1\nCREATE INDEX CONCURRENTLY IF NOT EXISTS job_later ON backwave.job (wire_name);\n"
	const nodes = 4
	results := make([]postgres.MigrateResult, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		node := openStore(t, modePgx, postgres.Options{Schema: s.Schema(), SkipMigrate: true})
		wg.Go(func() { results[i], errs[i] = postgres.MigrateLater(ctx, node, later) })
	}
	wg.Wait()
	var built int
	for i := range nodes {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i, errs[i])
		}
		if len(results[i].Applied) > 0 {
			built++
			if !slices.Equal(results[i].Built, []string{"job_later"}) {
				t.Errorf("node %d applied %v and built %v, want job_later built", i, results[i].Applied, results[i].Built)
			}
		}
	}
	if built != 1 {
		t.Fatalf("%d nodes applied the migration, want 1", built)
	}
	if exists, valid, _ := indexState(t, s.Schema(), "job_later"); !exists || !valid {
		t.Fatalf("job_later: exists %v, valid %v", exists, valid)
	}
}

// Coordinated Migration: "the others block on a database-level lock". A
// migrator waits while another session holds the lock — here until its
// context ends — and goes ahead once it is released.
func TestMigrateWaitsForLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, modePgx, postgres.Options{})
	holder := connect(t)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(hashtext($1))`, s.Schema()+".migrate"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := s.Migrate(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Migrate while another session holds the lock: %v, want it to wait until its deadline", err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock(hashtext($1))`, s.Schema()+".migrate"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate after the lock was released: %v", err)
	}
}

// In-Place Upgrade: "while jobs remain in flight". A migration's ALTER TABLE
// queued behind a long transaction on the job table would hold up every
// claim queued behind it; it gives up after its lock timeout instead, lets
// them through, and is tried again until the transaction is gone.
func TestMigrateGivesWayToLongTransactions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, modePgx, postgres.Options{})
	insert(t, s, "q", 1)
	holder, err := connect(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(context.Background()) }()
	if _, err := holder.Exec(ctx, fmt.Sprintf(`SELECT count(*) FROM %s.job`, s.Schema())); err != nil {
		t.Fatal(err)
	}
	migrated := make(chan error, 1)
	go func() {
		_, err := postgres.MigrateLater(ctx, s, laterN1)
		migrated <- err
	}()
	// Wait until the ALTER TABLE is queued for the job table's lock.
	watch := connect(t)
	for {
		var queued bool
		if err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND mode = 'AccessExclusiveLock'
    AND relation = ($1 || '.job')::regclass)`, s.Schema()).Scan(&queued); err != nil {
			t.Fatal(err)
		}
		if queued {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	claimCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	jobs, err := s.JobClaim(claimCtx, store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: 1, LeaseDuration: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim while a migration waits for the job table: %v, %v; want it through once the migration gives way", jobs, err)
	}
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-migrated; err != nil {
		t.Fatalf("Migrate after the long transaction ended: %v", err)
	}
}
