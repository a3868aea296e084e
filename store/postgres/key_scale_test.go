package postgres_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// Monitor.QueueKeys: "never a scan of the Queue's jobs, so it stays cheap
// at any table size". With BACKWAVE_KEYS_SCALE set (a minute of inserts on
// a small machine), a Queue of a million jobs — one key holding 900,000,
// 1,000 keys holding the rest — answers from the key counters, and the
// plan of the read names no job table at all.
func TestQueueKeysAtScale(t *testing.T) {
	if os.Getenv("BACKWAVE_KEYS_SCALE") == "" {
		t.Skip("set BACKWAVE_KEYS_SCALE to insert a million jobs and time QueueKeys")
	}
	ctx := context.Background()
	s := openStore(t, modePgx, postgres.Options{})
	conn, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	sc := s.Schema()
	t0 := time.Now()
	if _, err := conn.Exec(ctx, `INSERT INTO `+sc+`.job (queue, wire_name, state, max_attempts, scheduled_at, created_at, concurrency_key)
		SELECT 'q', 'w', 'scheduled', 3, now(), now(), CASE WHEN g <= 900000 THEN 'flood' ELSE 'k' || (g % 1000) END
		FROM generate_series(1, 1000000) g`); err != nil {
		t.Fatal(err)
	}
	t.Logf("inserted 1,000,000 jobs in %v", time.Since(t0))
	var best time.Duration
	var got []store.KeyCount
	for range 5 {
		t1 := time.Now()
		got, err = s.QueueKeys(ctx, store.QueueKeysParams{Queue: "q", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t1); best == 0 || d < best {
			best = d
		}
	}
	t.Logf("QueueKeys over 1,000,000 jobs: best of 5 %v; top %+v", best, got[:3])
	if got[0].Key != "flood" || got[0].Scheduled != 900000 {
		t.Fatalf("top key %+v, want flood with 900000 Scheduled", got[0])
	}
	rows, err := conn.Query(ctx, `EXPLAIN SELECT c.concurrency_key, sum(c.n) FROM (SELECT concurrency_key, n FROM `+sc+`.job_key_count WHERE queue = 'q'
		UNION ALL SELECT concurrency_key, n FROM `+sc+`.job_key_count_delta WHERE queue = 'q') c GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		_ = rows.Scan(&line)
		plan.WriteString(line + "\n")
	}
	rows.Close()
	if strings.Contains(plan.String(), " on job ") {
		t.Fatalf("the key count read scans the job table:\n%s", plan.String())
	}
}
