package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// The hot statements run on generic plans from their first execution: the
// claim (a small claim's custom plan costs more to make than to run), and
// the report, renew and relinquish (a custom plan over an analyzed job
// table may scan it instead of looking the Leases up by id). On a pool of
// one connection, pg_prepared_statements counts every plan the store's
// statements got.
func TestHotStatementsUseGenericPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testURL(t)
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, url, schema)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := postgres.OpenPool(ctx, pool, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	jobs := make([]store.NewJob, 300)
	for i := range jobs {
		jobs[i] = store.NewJob{WireName: "w", Queue: "q", Payload: []byte("{}"), MaxAttempts: 3}
	}
	if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	// Statistics of a table where almost nothing runs: the case a custom
	// plan gets wrong.
	if _, err := pool.Exec(ctx, "ANALYZE "+schema+".job"); err != nil {
		t.Fatal(err)
	}
	const worker = job.WorkerID("w1")
	for range 3 {
		claimed, err := s.JobClaim(ctx, store.ClaimParams{Worker: worker, Queues: []string{"q"}, Limit: 50, LeaseDuration: time.Minute, Reopen: new(time.Duration)})
		if err != nil || len(claimed) != 50 {
			t.Fatalf("claim: %d jobs, %v", len(claimed), err)
		}
		leases := make([]job.Lease, len(claimed))
		for i, j := range claimed {
			leases[i] = j.Lease()
		}
		if _, err := s.LeaseRenew(ctx, store.RenewParams{Worker: worker, Leases: leases, LeaseDuration: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LeaseRelinquish(ctx, store.RelinquishParams{Worker: worker, Leases: leases[:10]}); err != nil {
			t.Fatal(err)
		}
		var outs []store.Outcome
		for _, l := range leases[10:] {
			outs = append(outs, store.Outcome{Outcome: core.Outcome{Lease: l, State: job.StateSucceeded, Via: core.ViaSucceed}})
		}
		if _, err := s.OutcomeReport(ctx, store.ReportParams{Worker: worker, Outcomes: outs}); err != nil {
			t.Fatal(err)
		}
	}

	hot := map[string]string{ // a phrase only that statement has → its name here
		"FOR UPDATE SKIP LOCKED":         "claim",
		"input AS MATERIALIZED":          "report",
		"SET lease_expires_at = now.t +": "renew",
		"handed AS (":                    "relinquish",
		"OR q.fair_claim)":               "claim lock",
		"spent AS (":                     "rate reopen",
	}
	rows, err := pool.Query(ctx, "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := make(map[string]bool)
	for rows.Next() {
		var text string
		var generic, custom int64
		if err := rows.Scan(&text, &generic, &custom); err != nil {
			t.Fatal(err)
		}
		for phrase, name := range hot {
			if !strings.Contains(text, phrase) || seen[name] {
				continue
			}
			seen[name] = true
			if custom != 0 || generic == 0 {
				t.Errorf("%s statement: %d custom and %d generic plans; want generic plans only", name, custom, generic)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range hot {
		if !seen[name] {
			t.Errorf("no prepared %s statement found on the connection", name)
		}
	}
}
