package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// BenchmarkSynchronous measures what the synchronous setting costs a write
// transaction: one op is one job inserted in its own transaction (the
// single enqueue, one commit each), under NORMAL and under FULL (the
// default). docs/benchmarks.md records a run.
func BenchmarkSynchronous(b *testing.B) {
	for _, sync := range []sqlite.Synchronous{sqlite.SynchronousNormal, sqlite.SynchronousFull} {
		b.Run(string(sync), func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "jobs.db"), sqlite.Options{Synchronous: sync})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = st.Close() }()
			nj := []store.NewJob{{WireName: "w", Queue: "q", Payload: []byte(`{"n":1}`), MaxAttempts: 3}}
			b.ResetTimer()
			for b.Loop() {
				if _, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: nj}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}
