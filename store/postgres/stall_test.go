package postgres

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave/store/storetest"
)

// Glossary, In-Place Upgrade: "Upgrading BackWave's schema on a live
// database while jobs remain in flight — no drain, no maintenance window."
// TestMigrationStall measures it: on a job table of a million jobs (a
// quarter of them claimable) and a job_tag row per job, a drain claims and
// reports batches of ten in a loop while migrations 002 to 005 run one at a
// time, and the log gives, per migration, the longest claim or report that
// overlapped it. It runs twice: with the index steps built inside each
// migration's transaction, as plain CREATE INDEX (what the migrations did
// before index steps), and as shipped (CREATE INDEX CONCURRENTLY after the
// transaction). The drain's statements are written against the first
// schema, since the store's own need columns that 002 and 003 add. It takes
// a few minutes, so it runs only with BACKWAVE_MIGRATION_STALL=1:
//
//	BACKWAVE_MIGRATION_STALL=1 BACKWAVE_TEST_POSTGRES_URL=… go test -run TestMigrationStall -v ./store/postgres
func TestMigrationStall(t *testing.T) {
	jobs := storetest.StallJobs(t)
	url := os.Getenv("BACKWAVE_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("BACKWAVE_TEST_POSTGRES_URL is not set")
	}
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	// inTransaction is the shipped list with every index step folded back
	// into its migration's transaction as a plain CREATE INDEX.
	var inTransaction []migration
	for _, m := range migrations() {
		for _, st := range m.steps {
			m.body += "\n" + strings.Replace(st.sql, "CONCURRENTLY IF NOT EXISTS ", "", 1) + "\n"
		}
		m.steps = nil
		inTransaction = append(inTransaction, m)
	}
	for _, run := range []struct {
		name string
		list []migration
	}{{"in-transaction", inTransaction}, {"concurrently", migrations()}} {
		schema := "bwstall_" + strings.ReplaceAll(run.name, "-", "_")
		for _, line := range measureStall(t, ctx, pool, schema, jobs, run.list) {
			t.Logf("%-14s %s", run.name, line)
		}
	}
}

// measureStall builds a job table of the given size at schema version 1 in
// schema, runs the drain and migrations 2 and up of list beside it, and
// returns the timeline's report.
func measureStall(t *testing.T, ctx context.Context, pool *pgxpool.Pool, schema string, jobs int, list []migration) []string {
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, strings.ReplaceAll(sql, "backwave.", schema+"."), args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`); err != nil {
			t.Error(err)
		}
	}()
	s := &Store{db: newPoolDB(pool, false), schema: schema}
	if _, err := s.migrate(ctx, list[:1]); err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO backwave.job (queue, wire_name, state, attempt, max_attempts, scheduled_at, created_at, finalized_at)
SELECT 'q', 'w', CASE g % 4 WHEN 0 THEN 'scheduled' WHEN 1 THEN 'dead_lettered' ELSE 'succeeded' END,
    CASE g % 4 WHEN 0 THEN 0 ELSE 1 END, 3, now() - interval '1 day' + g * interval '1 ms', now() - interval '1 day',
    CASE g % 4 WHEN 0 THEN NULL ELSE now() END
FROM generate_series(1, $1::int) g`, jobs)
	exec(`INSERT INTO backwave.job_tag (job_id, key, value) SELECT id, 'tenant', 't' || (id % 1000) FROM backwave.job`)
	exec(`VACUUM ANALYZE backwave.job`)
	exec(`VACUUM ANALYZE backwave.job_tag`)

	var (
		tl    storetest.StallTimeline
		edges atomic.Bool // the drain's reports count Dependency edges
	)
	drainCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { drain(drainCtx, pool, schema, &tl, &edges) })
	defer func() { stop(); wg.Wait() }()

	window := func(name string, fn func() error) {
		t.Helper()
		if err := tl.Window(name, fn); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	window("no migration (2 s)", func() error { <-time.After(2 * time.Second); return nil })
	<-time.After(time.Second)
	for k := 2; k <= len(list); k++ {
		m := list[k-1]
		if m.name == "005_dependency_uncounted" {
			// Dependency edges for 005's index to cover, half as many as jobs.
			exec(`INSERT INTO backwave.job_dependency (job_id, parent_id, mode, counted)
SELECT g + 1, g, 'on_success', g % 10 <> 0 FROM generate_series(1, $1::int) g`, jobs/2)
			exec(`VACUUM ANALYZE backwave.job_dependency`)
			<-time.After(time.Second)
		}
		window(m.name, func() error { _, err := s.migrate(ctx, list[:k]); return err })
		edges.Store(m.name >= "003")
		// A pause between windows, so that an operation a migration held up
		// ends before the next window opens and is counted in its own.
		<-time.After(time.Second)
	}
	return tl.Report()
}

// drain claims batches of ten jobs and reports them succeeded until ctx is
// done, timing each statement on tl. Its statements fit every schema from
// version 1 on; once edges is set (job_dependency exists), a report also
// counts the edges of the jobs it finishes, as the store's reports do.
func drain(ctx context.Context, pool *pgxpool.Pool, schema string, tl *storetest.StallTimeline, edges *atomic.Bool) {
	claim := strings.ReplaceAll(`UPDATE backwave.job SET state = 'running', attempt = attempt + 1, worker = 'drain',
    lease_expires_at = now() + interval '5 minutes'
WHERE id IN (SELECT id FROM backwave.job WHERE state = 'scheduled' AND queue = 'q' AND scheduled_at <= now()
    ORDER BY scheduled_at, id LIMIT 10 FOR UPDATE SKIP LOCKED)
RETURNING id`, "backwave.", schema+".")
	report := strings.ReplaceAll(`UPDATE backwave.job SET state = 'succeeded', worker = NULL, lease_expires_at = NULL, finalized_at = now()
WHERE id = ANY($1) AND worker = 'drain' AND state = 'running'`, "backwave.", schema+".")
	reportEdges := strings.ReplaceAll(`WITH done AS (`+strings.ReplaceAll(report, schema+".", "backwave.")+` RETURNING id)
UPDATE backwave.job_dependency SET counted = true WHERE parent_id IN (SELECT id FROM done) AND NOT counted`, "backwave.", schema+".")
	for ctx.Err() == nil {
		start := time.Now()
		rows, err := pool.Query(ctx, claim)
		var ids []int64
		if err == nil {
			for rows.Next() {
				var id int64
				if err = rows.Scan(&id); err != nil {
					break
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
		if ctx.Err() != nil {
			return
		}
		tl.Op(start, err)
		if len(ids) == 0 {
			continue
		}
		start = time.Now()
		if edges.Load() {
			_, err = pool.Exec(ctx, reportEdges, ids)
		} else {
			_, err = pool.Exec(ctx, report, ids)
		}
		if ctx.Err() != nil {
			return
		}
		tl.Op(start, err)
	}
}
