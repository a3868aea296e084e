package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// BenchmarkClaimReport measures the store alone: one op is one job inserted,
// then claimed and reported Succeeded in batches of 100.
func BenchmarkClaimReport(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "jobs.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	for left := b.N; left > 0; {
		jobs := make([]store.NewJob, min(left, 5000))
		for i := range jobs {
			jobs[i] = store.NewJob{WireName: "w", Queue: "q", Payload: []byte(`{"n":1}`), MaxAttempts: 3}
		}
		if _, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs}); err != nil {
			b.Fatal(err)
		}
		left -= len(jobs)
	}
	b.ResetTimer()
	for done := 0; done < b.N; {
		claimed, err := st.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: 100, LeaseDuration: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		outs := make([]store.Outcome, len(claimed))
		for i, j := range claimed {
			outs[i] = store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}, core.ResultSucceeded, core.DefaultRetryPolicy())}
		}
		if _, err := st.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: outs}); err != nil {
			b.Fatal(err)
		}
		done += len(claimed)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// claimLoop claims and reports batches of 100 straight through the store,
// without a Client, until the Queue is empty.
func claimLoop(ctx context.Context, name string) error {
	st, err := sqlite.Open(ctx, os.Getenv(envDB), sqlite.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	worker := job.WorkerID(name)
	for {
		claimed, err := st.JobClaim(ctx, store.ClaimParams{Worker: worker, Queues: []string{os.Getenv(envQueue)}, Limit: 100, LeaseDuration: time.Minute})
		if err != nil {
			return err
		}
		if len(claimed) == 0 {
			return nil
		}
		outs := make([]store.Outcome, len(claimed))
		for i, j := range claimed {
			outs[i] = store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}, core.ResultSucceeded, core.DefaultRetryPolicy())}
		}
		if _, err := st.OutcomeReport(ctx, store.ReportParams{Worker: worker, Outcomes: outs}); err != nil {
			return err
		}
	}
}

// BenchmarkThroughput measures noop jobs per second worked by one and by
// three processes sharing one file: "client" processes run a Client (one
// Pump with PoolSize 100 and claim batches of up to 100), "store" processes
// a bare loop of JobClaim and OutcomeReport in batches of 100. The rate is taken from the Transition
// Log, from the first claim to the last outcome, so process start and stop
// are excluded. Run it by hand, without the race detector:
//
//	go test -run '^$' -bench Throughput -benchtime 30000x ./store/sqlite
func BenchmarkThroughput(b *testing.B) {
	for _, bc := range []struct {
		name  string
		procs int
		role  string
	}{{"client/processes=1", 1, ""}, {"client/processes=3", 3, ""}, {"store/processes=1", 1, "loop"}, {"store/processes=3", 3, "loop"}} {
		procs := bc.procs
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "jobs.db")
			st, err := sqlite.Open(ctx, path, sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = st.Close() }()
			for left := b.N; left > 0; {
				jobs := make([]store.NewJob, min(left, 5000))
				for i := range jobs {
					jobs[i] = store.NewJob{WireName: workArgs{}.WireName(), Queue: "work", Payload: []byte(`{"n":1}`), MaxAttempts: 3}
				}
				if _, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs}); err != nil {
					b.Fatal(err)
				}
				left -= len(jobs)
			}
			b.ResetTimer()
			for _, c := range fleet(b, path, "work", procs, 100, 30*time.Second, 0, envRole+"="+bc.role) {
				c.wait(b, 5*time.Minute)
			}
			b.StopTimer()
			raw, err := sql.Open("sqlite", path)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = raw.Close() }()
			var first, last int64
			err = raw.QueryRowContext(ctx, `SELECT
				(SELECT MIN(at) FROM backwave_job_transition WHERE via = 2),
				(SELECT MAX(at) FROM backwave_job_transition WHERE via = 3)`).Scan(&first, &last)
			if err != nil {
				b.Fatal(err)
			}
			span := time.Duration(last-first) * time.Microsecond
			b.ReportMetric(float64(b.N)/span.Seconds(), "jobs/s")
		})
	}
}
