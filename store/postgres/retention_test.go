package postgres_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/vtime"
)

// purgeRowsEnv sets how many terminal jobs TestPurgeManyRows purges; by
// hand: BACKWAVE_PURGE_ROWS=1000000 go test -run TestPurgeManyRows -v ./store/postgres/
const purgeRowsEnv = "BACKWAVE_PURGE_ROWS"

// TestPurgeManyRows purges a backlog of terminal jobs in bounded batches,
// each one statement in its own short transaction, and checks that nothing
// stored beside a job is left behind and the kept counters agree (issue 7,
// acceptance: "retention purges a million terminal rows in bounded batches
// ... without a single long transaction"). CI purges 20,000; the
// million-row run is by hand with BACKWAVE_PURGE_ROWS=1000000, and it logs
// the batch size and the longest batch.
func TestPurgeManyRows(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	n := 20_000
	if testing.Short() {
		n = 4_000
	}
	if v := os.Getenv(purgeRowsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", purgeRowsEnv, v)
		}
	}
	clock := vtime.NewManual(vtime.Epoch)
	s := openStore(t, modePgx, postgres.Options{Now: clock.Now})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	began := time.Now()
	at := clock.Now()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO S.job (queue, wire_name, state, attempt, max_attempts, scheduled_at, created_at, finalized_at, output)
		SELECT 'q', 'bulk', CASE i % 4 WHEN 0 THEN 'dead_lettered' WHEN 1 THEN 'cancelled' ELSE 'succeeded' END, 1, 1, $2, $2, $2,
			CASE WHEN i % 4 > 1 THEN decode(repeat(md5(i::text), 3), 'hex') END
		FROM generate_series(1, $1::int) i`, []any{n, at}},
		{`INSERT INTO S.job_payload (job_id, payload) SELECT id, decode(repeat(md5(id::text), 6), 'hex') FROM S.job`, nil},
		{`INSERT INTO S.job_tag (job_id, key, value) SELECT id, '', 'bulk' FROM S.job UNION ALL SELECT id, 'tenant', 't' || (id % 50) FROM S.job`, nil},
		{`INSERT INTO S.job_transition (job_id, at, from_state, state, via, attempt)
		SELECT id, $1::timestamptz, 'unknown', 'scheduled', 'insert', 0 FROM S.job UNION ALL
		SELECT id, $1::timestamptz, 'scheduled', 'running', 'claim', 1 FROM S.job UNION ALL
		SELECT id, $1::timestamptz, 'running', state, 'succeed', 1 FROM S.job`, []any{at}},
		{`ANALYZE S.job`, nil},
	} {
		if _, err := conn.Exec(ctx, strings.ReplaceAll(q.sql, "S.", s.Schema()+"."), q.args...); err != nil {
			t.Fatalf("fill: %v", err)
		}
	}
	t.Logf("filled %d terminal jobs with their side rows in %v", n, time.Since(began).Round(time.Millisecond))
	clock.Advance(48 * time.Hour)

	const batch = 1000
	var longest, total time.Duration
	var took []time.Duration
	purged, batches := 0, 0
	for _, sweep := range [][]job.State{{job.StateSucceeded, job.StateCancelled}, {job.StateDeadLettered, job.StateQuarantined}} {
		for {
			t0 := time.Now()
			res, err := s.JobPurge(ctx, store.PurgeParams{States: sweep, KeepFor: 24 * time.Hour, Limit: batch})
			d := time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Purged > batch {
				t.Fatalf("a batch purged %d, above its limit %d", res.Purged, batch)
			}
			longest, total = max(longest, d), total+d
			took = append(took, d)
			purged += res.Purged
			batches++
			if res.Purged < batch {
				break
			}
		}
	}
	if purged != n {
		t.Fatalf("purged %d of %d", purged, n)
	}
	for _, table := range []string{"job", "job_payload", "job_tag", "job_transition", "schedule_occurrence"} {
		var rows int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+s.Schema()+"."+table).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != 0 {
			t.Errorf("%d rows left in %s", rows, table)
		}
	}
	counts, err := s.JobCountByState(ctx, store.CountParams{})
	if err != nil {
		t.Fatal(err)
	}
	for st, c := range counts {
		if c != 0 {
			t.Errorf("the kept counter says %d %s jobs after the purge", c, st)
		}
	}
	t.Logf("purged %d jobs in %d batches of at most %d: longest batch (one transaction) %v, p99 %v, median %v, mean %v, total %v",
		purged, batches, batch, longest.Round(time.Microsecond), quantile(took, 0.99), quantile(took, 0.5),
		(total / time.Duration(batches)).Round(time.Microsecond), total.Round(time.Millisecond))
}

// quantile returns the q-quantile of the durations.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))].Round(time.Microsecond)
}
