package shell_test

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// BenchmarkPumpDrain drains a backlog of b.N noop jobs through one Pump of
// 1,000 Workers on the memstore, under the wall clock: one op is one job
// claimed, executed and reported, so allocs/op is the allocations per job of
// the Pump, the Driver and the memstore together. The backlog is inserted
// before the timer starts.
func BenchmarkPumpDrain(b *testing.B) {
	st := memstore.New(memstore.Options{Clock: shell.WallClock{}})
	const batch = 5000
	for left := b.N; left > 0; left -= batch {
		n := min(left, batch)
		jobs := make([]store.NewJob, n)
		for i := range jobs {
			jobs[i] = store.NewJob{WireName: "w", Queue: queue, Payload: []byte(`{"t":1}`), MaxAttempts: 1}
		}
		if _, err := st.JobInsertMany(context.Background(), store.InsertManyParams{Jobs: jobs}); err != nil {
			b.Fatalf("insert: %v", err)
		}
	}
	p, err := shell.New(shell.Config{
		Driver: node.Config{
			Worker:          "w1",
			Policy:          node.Strict(queue),
			PoolSize:        1000,
			MaxClaimBatch:   1000,
			MaxOutcomeBatch: 1000,
			LeaseDuration:   30 * time.Second,
		},
		Store: st,
		Executor: shell.ExecutorFunc(func(context.Context, job.Job) shell.Result {
			return shell.Result{Result: core.ResultSucceeded}
		}),
		Pacing: node.Pacing{PollInterval: 20 * time.Millisecond},
		Hints:  st,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatalf("shell.New: %v", err)
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	if err := p.Start(context.Background()); err != nil {
		b.Fatalf("Start: %v", err)
	}
	for p.Stats().Reported < uint64(b.N) {
		time.Sleep(200 * time.Microsecond)
	}
	b.StopTimer()
	if err := p.Stop(context.Background()); err != nil {
		b.Fatalf("Stop: %v", err)
	}
}
