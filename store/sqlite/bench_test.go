package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
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
			outs[i] = store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}, core.ResultSucceeded, core.DefaultRetryPolicy)}
		}
		if _, err := st.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: outs}); err != nil {
			b.Fatal(err)
		}
		done += len(claimed)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
