package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// BenchmarkNoopThroughput measures the framework-overhead ceiling: how fast
// 1 and 4 nodes (Clients, each on its own pool) drain a backlog of noop
// jobs, claim to applied outcome. It reports jobs/s; the backlog is
// inserted before the clock starts (its insert rate is reported too).
//
//	go test ./store/postgres -run '^$' -bench NoopThroughput -benchtime 1x
func BenchmarkNoopThroughput(b *testing.B) {
	const jobs = 20_000
	for _, nodes := range []int{1, 4} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			admin := openStore(b, modePgx, postgres.Options{})
			for b.Loop() {
				b.StopTimer()
				t0 := time.Now()
				enqueueNoop(b, admin, jobs)
				b.ReportMetric(float64(jobs)/time.Since(t0).Seconds(), "inserts/s")
				var stores []*postgres.Store
				for range nodes {
					stores = append(stores, openStore(b, modePgx, postgres.Options{Schema: admin.Schema(), SkipMigrate: true}))
				}
				b.StartTimer()
				start := time.Now()
				var clients []*backwave.Client
				for i, s := range stores {
					g := nodeGroup(time.Minute)
					g.PoolSize, g.MaxClaimBatch = 100, 100
					w := backwave.NewHandlers()
					if err := backwave.AddHandlerFunc(w, func(context.Context, *backwave.Job[noopArgs]) error { return nil }); err != nil {
						b.Fatal(err)
					}
					c, err := backwave.NewClient(s, backwave.Config{Handlers: w, NodeID: fmt.Sprint("bench", i), Logger: quietLogger(), Groups: []backwave.WorkerGroupOptions{g}})
					if err != nil {
						b.Fatal(err)
					}
					if err := c.Start(context.Background()); err != nil {
						b.Fatal(err)
					}
					clients = append(clients, c)
				}
				waitUntil(b, "the backlog to drain", 10*time.Minute, func() bool {
					return countState(b, admin, job.StateSucceeded) == jobs
				})
				elapsed := time.Since(start)
				b.StopTimer()
				for _, c := range clients {
					_ = c.Stop(context.Background())
				}
				b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
				b.StartTimer()
			}
		})
	}
}

// BenchmarkClaimReport measures the store alone: one worker claiming 100
// jobs and reporting their success in one statement each, per op one job,
// in both connection modes.
//
//	go test ./store/postgres -run '^$' -bench ClaimReport
func BenchmarkClaimReport(b *testing.B) {
	for _, m := range modes {
		b.Run(string(m), func(b *testing.B) {
			ctx := context.Background()
			s := openStore(b, m, postgres.Options{})
			for left := b.N; left > 0; {
				jobs := make([]store.NewJob, min(left, 5000))
				for i := range jobs {
					jobs[i] = store.NewJob{WireName: "w", Queue: "q", Payload: []byte(`{"n":1}`), MaxAttempts: 3}
				}
				if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs}); err != nil {
					b.Fatal(err)
				}
				left -= len(jobs)
			}
			b.ResetTimer()
			start := time.Now()
			for done := 0; done < b.N; {
				claimed, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: 100, LeaseDuration: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				outs := make([]store.Outcome, len(claimed))
				for i, j := range claimed {
					outs[i] = store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}, core.ResultSucceeded, core.DefaultRetryPolicy())}
				}
				if _, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: outs}); err != nil {
					b.Fatal(err)
				}
				done += len(claimed)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}
