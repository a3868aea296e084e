package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// Glossary, Schema Name: configurable "so a deployment can … coexist with
// another application's objects in a shared database". Two stores on two
// schemas of one database share no job, no Queue setting and no hint.
func TestSchemaIsolation(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			a := openStore(t, m, postgres.Options{})
			b := openStore(t, m, postgres.Options{})
			ctx := t.Context()
			heard := make(chan string, 16)
			defer b.SubscribeHints(func(q string) { heard <- q })()

			aIDs := insert(t, a, "shared", 3)
			if err := a.QueuePause(ctx, store.QueueParams{Queue: "paused-in-a"}); err != nil {
				t.Fatal(err)
			}
			jobs, err := b.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"shared"}, Limit: 10, LeaseDuration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != 0 {
				t.Fatalf("store on schema %s claimed %d jobs inserted on %s", b.Schema(), len(jobs), a.Schema())
			}
			qs, err := b.QueueList(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(qs) != 0 {
				t.Fatalf("store on schema %s lists Queues %+v of %s", b.Schema(), qs, a.Schema())
			}
			if _, err := b.JobGet(ctx, aIDs[0]); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("JobGet across schemas: %v, want ErrNotFound", err)
			}
			// Job ids are per schema: b's first job may well have a's first
			// id, and each store reads its own.
			bIDs := insert(t, b, "shared", 1)
			jb, err := b.JobGet(ctx, bIDs[0])
			if err != nil || jb.Queue != "shared" {
				t.Fatalf("b.JobGet(%d) = %+v, %v", bIDs[0], jb, err)
			}
			if counts, err := a.JobCountByState(ctx, store.CountParams{}); err != nil || counts[job.StateScheduled] != 3 {
				t.Fatalf("a counts %v, %v; want its own 3 jobs", counts, err)
			}
			// b's listener hears b's insert, never a's queue "shared" insert
			// before that; the first hint it reports for a Queue it does not
			// know would be a leak.
			insert(t, a, "only-in-a", 1)
			insert(t, b, "marker", 1)
			for q := range heard {
				if q == "only-in-a" {
					t.Fatalf("store on %s heard a hint for a Queue of %s", b.Schema(), a.Schema())
				}
				if q == "marker" {
					break
				}
			}
		})
	}
}

// TestSchemaInvalid: a Schema Name that would need quoting is refused
// before any connection is made.
func TestSchemaInvalid(t *testing.T) {
	t.Parallel()
	_, err := postgres.Open(t.Context(), "postgres://nobody@127.0.0.1:1/none", postgres.Options{Schema: "Bad-Name"})
	if !errors.Is(err, store.ErrInvalidParams) {
		t.Fatalf("Open with schema Bad-Name: %v, want ErrInvalidParams", err)
	}
}

// The default Schema Name runs the statements exactly as written. It gets a
// database of its own, so it cannot meet another test's (or a developer's)
// backwave schema.
func TestDefaultSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	db := randomSchema(t) + "_db"
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatalf("create a database for the default schema (the test role needs CREATEDB): %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testURL(t))
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	s, err := postgres.Open(ctx, withPath(t, testURL(t), "/"+db), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Schema() != postgres.DefaultSchema {
		t.Fatalf("Schema() = %q, want %q", s.Schema(), postgres.DefaultSchema)
	}
	id := insert(t, s, "q", 1)[0]
	jobs, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: 1, LeaseDuration: time.Minute})
	if err != nil || len(jobs) != 1 || jobs[0].ID != id {
		t.Fatalf("claim = %v, %v", jobs, err)
	}
	var tables int
	other, err := pgx.Connect(ctx, withPath(t, testURL(t), "/"+db))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	if err := other.QueryRow(ctx, `SELECT count(*) FROM backwave.job WHERE state = 'running'`).Scan(&tables); err != nil || tables != 1 {
		t.Fatalf("backwave.job holds %d running jobs (%v), want the one claimed", tables, err)
	}
}
