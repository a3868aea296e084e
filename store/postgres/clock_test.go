package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// Without Options.Now the store's clock is the database server's (package
// store, Clocks: "the database server's for PostgreSQL"): due times and
// Leases are stamped from now() on the server, bracketed here by two
// readings of it.
func TestServerClock(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			s := openStore(t, m, postgres.Options{})
			conn, err := pgx.Connect(t.Context(), testURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			serverNow := func() time.Time {
				var now time.Time
				if err := conn.QueryRow(t.Context(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
					t.Fatal(err)
				}
				return now
			}
			before := serverNow()
			id := insert(t, s, "q", 1)[0]
			jobs, err := s.JobClaim(t.Context(), store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: 1, LeaseDuration: time.Hour})
			if err != nil || len(jobs) != 1 || jobs[0].ID != id {
				t.Fatalf("claim = %v, %v", jobs, err)
			}
			after := serverNow()
			j := jobs[0]
			in := func(what string, got, lo, hi time.Time) {
				if got.Before(lo.Truncate(time.Microsecond)) || got.After(hi) {
					t.Errorf("%s = %v, want within [%v, %v]", what, got, lo, hi)
				}
			}
			in("CreatedAt", j.CreatedAt, before, after)
			in("ScheduledAt", j.ScheduledAt, before, after)
			in("LeaseExpiresAt", j.LeaseExpiresAt, before.Add(time.Hour), after.Add(time.Hour))
		})
	}
}
