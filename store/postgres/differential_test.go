package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/storetest"
	"github.com/backwave/backwave/vtime"
)

// TestDifferential replays the Conformance Suite's random call sequences on
// this adapter, in both connection modes (and through a transaction pooler
// when BACKWAVE_TEST_PGBOUNCER is set) and its calls moving between two
// Stores on the same schema, and on the In-Memory Store, and requires the
// same answers and final state (storetest.RunDifferential). The store's
// clock is pinned to a Manual clock through Options.Now, as in
// TestConformance. The database/sql mode and the pooler run every statement
// the pgx mode does, so their shorter runs check the plumbing.
func TestDifferential(t *testing.T) {
	t.Parallel()
	testURL(t)
	for _, m := range targets {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			skipUnlessMode(t, m)
			storetest.RunDifferential(t, func(t *testing.T) storetest.Harness {
				clock := vtime.NewManual(vtime.Epoch)
				schema, migrated := schemas.take(t)
				h := harness(t, m, openStore(t, m, postgres.Options{Schema: schema, SkipMigrate: migrated, Now: clock.Now}), clock)
				h.Peer = func(t *testing.T) store.Store {
					return openStore(t, m, postgres.Options{Schema: schema, SkipMigrate: true, Now: clock.Now})
				}
				return h
			}, storetest.DifferentialOptions{Quick: raceEnabled || m != modePgx})
		})
	}
}

// TestDifferentialCollation runs the differential run in a database whose
// default collation is ICU's en-US, not byte order. The contract's orders by
// name (Queues, schedules, Tags) are byte order, as the In-Memory Store
// sorts, so every ORDER BY on text must say COLLATE "C" or the answers
// follow whatever collation the database was made with. It is skipped where
// the server cannot make such a database (before PostgreSQL 15, or built
// without ICU).
func TestDifferentialCollation(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	db := randomSchema(t)
	admin, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+db+` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", db, err)
		}
	})
	if _, err := admin.Exec(t.Context(), `CREATE DATABASE `+db+` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`); err != nil {
		t.Skipf("the server cannot make a database with an ICU collation: %v", err)
	}
	dbURL := withPath(t, url, "/"+db)
	storetest.RunDifferential(t, func(t *testing.T) storetest.Harness {
		clock := vtime.NewManual(vtime.Epoch)
		open := func(t *testing.T, schema string, p store.HistoryPolicy) store.Store {
			s, err := postgres.Open(context.Background(), dbURL, postgres.Options{Schema: schema, Now: clock.Now, History: p})
			if err != nil {
				t.Fatalf("open a store in %s: %v", db, err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		schema := randomSchema(t)
		return storetest.Harness{
			Store:       open(t, schema, store.HistoryTransitionsWithDetail),
			Now:         clock.Now,
			Advance:     func(d time.Duration) { clock.Advance(d) },
			WithHistory: func(p store.HistoryPolicy) store.Store { return open(t, randomSchema(t), p) },
			Peer:        func(t *testing.T) store.Store { return open(t, schema, store.HistoryTransitionsWithDetail) },
		}
	}, storetest.DifferentialOptions{Quick: true})
}
