package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

// purgeRowsEnv sets how many terminal jobs TestPurgeManyRows purges; by
// hand: BACKWAVE_PURGE_ROWS=1000000 go test -run TestPurgeManyRows -v ./store/sqlite/
const purgeRowsEnv = "BACKWAVE_PURGE_ROWS"

// fillTerminal inserts n terminal jobs, finalized at the clock's now, each
// with a payload, two Tags, three Transition Log entries and, if Succeeded,
// Job Output: a quarter Dead-Lettered, a quarter Cancelled, the rest
// Succeeded. Set-based SQL, so a million rows load in seconds.
func fillTerminal(t testing.TB, s *Store, n int) {
	t.Helper()
	at := micros(s.clock.Now())
	ctx := context.Background()
	err := s.write(ctx, "fill", func(tx *sql.Tx) error {
		for _, q := range []string{
			`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
			INSERT INTO backwave_job (queue, wire_name, state, attempt, max_attempts, scheduled_at, created_at, finalized_at)
			SELECT 'q', 'bulk', CASE i % 4 WHEN 0 THEN 5 WHEN 1 THEN 6 ELSE 4 END, 1, 1, ?2, ?2, ?2 FROM n`,
			`INSERT INTO backwave_job_payload (job_id, payload) SELECT id, randomblob(100) FROM backwave_job`,
			`INSERT INTO backwave_job_tag (job_id, key, value) SELECT id, '', 'bulk' FROM backwave_job`,
			`INSERT INTO backwave_job_tag (job_id, key, value) SELECT id, 'tenant', 't' || (id % 50) FROM backwave_job`,
			`INSERT INTO backwave_job_transition (job_id, at, from_state, state, via, attempt)
			SELECT id, ?2, 0, 1, 1, 0 FROM backwave_job UNION ALL
			SELECT id, ?2, 1, 3, 2, 1 FROM backwave_job UNION ALL
			SELECT id, ?2, 3, state, 3, 1 FROM backwave_job`,
			`INSERT INTO backwave_job_output (job_id, output) SELECT id, randomblob(50) FROM backwave_job WHERE state = 4`,
		} {
			if _, err := tx.ExecContext(ctx, s.schema.Rename(q), n, at); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("fill %d terminal jobs: %v", n, err)
	}
}

// sideRows counts the rows of every table that stores something beside a
// job.
func sideRows(t testing.TB, s *Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"job", "job_payload", "job_tag", "job_transition", "job_output", "schedule_occurrence"} {
		var n int
		if err := s.r.QueryRowContext(context.Background(), s.schema.Rename("SELECT COUNT(*) FROM backwave_"+table)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

// TestPurgeManyRows purges a backlog of terminal jobs in bounded batches,
// each one short write transaction, and checks that nothing stored beside a
// job is left behind and the kept counters agree (issue 7, acceptance:
// "retention purges a million terminal rows in bounded batches ... without a
// single long transaction"). CI purges 20,000 (2,000 under the race
// detector); the million-row run is by
// hand with BACKWAVE_PURGE_ROWS=1000000, and it logs the batch size and the
// longest batch.
func TestPurgeManyRows(t *testing.T) {
	t.Parallel()
	n := purgeRows
	if testing.Short() {
		n = min(n, 4_000)
	}
	if v := os.Getenv(purgeRowsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", purgeRowsEnv, v)
		}
	}
	clock := vtime.NewManual(vtime.Epoch)
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "jobs.db"), Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	began := time.Now()
	fillTerminal(t, s, n)
	t.Logf("filled %d terminal jobs with their side rows in %v", n, time.Since(began).Round(time.Millisecond))
	clock.Advance(48 * time.Hour)

	const batch = 1000
	var longest, total time.Duration
	var took []time.Duration
	purged, batches := 0, 0
	for _, sweep := range [][]job.State{{job.StateSucceeded, job.StateCancelled}, {job.StateDeadLettered, job.StateQuarantined}} {
		for {
			t0 := time.Now()
			res, err := s.JobPurge(context.Background(), store.PurgeParams{States: sweep, KeepFor: 24 * time.Hour, Limit: batch})
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
	for table, rows := range sideRows(t, s) {
		if rows != 0 {
			t.Errorf("%d rows left in %s", rows, table)
		}
	}
	counts, err := s.JobCountByState(context.Background(), store.CountParams{})
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
