package backwave_test

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

type benchNoop struct {
	T int64 `json:"t"`
}

func (benchNoop) WireName() string { return "bench.noop" }

// BenchmarkClientDrain drains a backlog of b.N noop jobs through a Client of
// one Pump of 1,000 Workers on the memstore, under the wall clock: one op is
// one job claimed, its payload decoded into a Job[T], its handler run and
// its outcome reported, so allocs/op is the allocations per job of the whole
// node (the memstore's included). The backlog is inserted before the timer
// starts.
func BenchmarkClientDrain(b *testing.B) {
	st := newStore()
	ctx := context.Background()
	producer, err := backwave.NewClient(st, backwave.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	const batch = 5000
	for left := b.N; left > 0; left -= batch {
		params := make([]backwave.EnqueueParams, min(left, batch))
		for i := range params {
			params[i].Args = benchNoop{T: 1}
		}
		if _, err := producer.EnqueueMany(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	h := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[benchNoop]) error { return nil }); err != nil {
		b.Fatal(err)
	}
	g := backwave.DefaultWorkerGroup("g", backwave.Strict(backwave.DefaultQueue))
	g.PoolSize, g.MaxClaimBatch, g.MaxOutcomeBatch = 1000, 1000, 1000
	g.PollInterval = 20 * time.Millisecond
	c, err := backwave.NewClient(st, backwave.Config{
		Handlers: h, Groups: []backwave.WorkerGroupOptions{g},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	done := func() bool {
		n, err := st.JobCountByState(ctx, store.CountParams{})
		if err != nil {
			b.Fatal(err)
		}
		return n[job.StateSucceeded] == b.N
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for !done() {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
}
