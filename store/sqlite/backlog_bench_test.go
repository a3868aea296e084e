package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

// BenchmarkBacklogScale times the Backlog reads (QueueBacklog and a
// last-hour Throughput) over BACKWAVE_SQLITE_BENCH_JOBS jobs (1,000,000 if
// unset) in one file: 10 Queues, 80% Succeeded (a tenth of them in the last
// hour), 8% Dead-Lettered, Cancelled or Quarantined, 12% Scheduled, half of
// those due (ready) and half an hour ahead (later), 1% Retrying. The
// maintained counts are exact (the triggers fire on the load).
//
//	BACKWAVE_SQLITE_BENCH_JOBS=10000000 go test ./store/sqlite -run '^$' -bench BacklogScale -benchtime 20x
func BenchmarkBacklogScale(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("BACKWAVE_SQLITE_BENCH_JOBS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			b.Fatalf("BACKWAVE_SQLITE_BENCH_JOBS=%q: want a number of at least 1000", v)
		}
	}
	ctx := context.Background()
	clock := vtime.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s, err := Open(ctx, filepath.Join(b.TempDir(), "jobs.db"), Options{Clock: clock})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	now := clock.Now().UnixMicro()
	start := time.Now()
	// g % 100: < 80 succeeded, < 88 other settled states, else Scheduled;
	// Scheduled with g even is due an hour ago, odd half an hour ahead.
	_, err = s.w.ExecContext(ctx, `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?1)
INSERT INTO backwave_job (queue, wire_name, state, attempt, max_attempts, scheduled_at, created_at, finalized_at, retry_cause)
SELECT 'q' || (i % 10), 'w', s, 1, 5,
	CASE WHEN s = 1 AND i % 2 = 1 THEN ?2 + 1800000000 ELSE ?2 - 3600000000 END,
	?2 - 7200000000,
	CASE WHEN s = 1 THEN NULL WHEN i % 10 = 0 THEN ?2 - (i % 3600) * 1000000 ELSE ?2 - 7200000000 END,
	CASE WHEN s = 1 AND i % 100 = 99 THEN 1 ELSE 0 END
FROM (SELECT i, CASE WHEN i % 100 < 80 THEN 4 WHEN i % 100 < 85 THEN 5 WHEN i % 100 < 86 THEN 7
	WHEN i % 100 < 88 THEN 6 ELSE 1 END AS s FROM g)`, n, now)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d jobs in %s", n, time.Since(start).Round(time.Second))
	got, err := s.QueueBacklog(ctx, store.BacklogParams{})
	if err != nil || len(got) != 10 {
		b.Fatalf("QueueBacklog = %v, %v", got, err)
	}
	b.Logf("q0: %+v", got[0])
	explainBacklog(b, s)
	b.Run("queue_backlog", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.QueueBacklog(ctx, store.BacklogParams{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/read")
	})
	b.Run("throughput_last_hour", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Throughput(ctx, store.ThroughputParams{Since: clock.Now().Add(-time.Hour)}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/read")
	})
}

func explainBacklog(b *testing.B, s *Store) {
	for _, q := range []string{sqlBacklog, sqlThroughput} {
		rows, err := s.w.Query(`EXPLAIN QUERY PLAN `+q, int64(0), int64(store.DefaultBacklogCountCap))
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var id, parent, notused int
			var detail string
			_ = rows.Scan(&id, &parent, &notused, &detail)
			b.Logf("%d %s", parent, detail)
		}
		_ = rows.Close()
	}
}
