package postgres_test

import (
	"errors"
	"testing"
	"time"

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
