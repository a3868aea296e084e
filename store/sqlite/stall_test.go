package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backwave/backwave/store/storetest"
)

// Glossary, In-Place Upgrade: "Upgrading BackWave's schema on a live
// database while jobs remain in flight — no drain, no maintenance window."
// TestMigrationStall measures what it costs on SQLite, which has no index
// build that lets writers through: on a file of a million jobs (a quarter
// of them claimable) and a job_tag row per job, a drain on a connection of
// its own, as another process's would be, claims and reports batches of ten
// in a loop while migrations 0002 to 0005 run one at a time, and the log
// gives, per migration, the longest claim or report that overlapped it. A
// write that waits longer than the busy timeout (10 s) fails and is counted.
// The drain's statements are written against the first schema, since the
// store's own need columns later migrations add. It takes a few minutes,
// so it runs only with BACKWAVE_MIGRATION_STALL=1:
//
//	BACKWAVE_MIGRATION_STALL=1 go test -run TestMigrationStall -v ./store/sqlite
func TestMigrationStall(t *testing.T) {
	jobs := storetest.StallJobs(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := connect(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if _, err := s.migrate(ctx, migrations[:1]); err != nil {
		t.Fatal(err)
	}
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := s.w.ExecContext(ctx, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	now := micros(time.Now())
	exec(`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?)
INSERT INTO backwave_job (queue, wire_name, state, attempt, max_attempts, scheduled_at, created_at, finalized_at)
SELECT 'q', 'w', CASE i % 4 WHEN 0 THEN 1 WHEN 1 THEN 5 ELSE 4 END, CASE i % 4 WHEN 0 THEN 0 ELSE 1 END, 3,
    ? + i, ?, CASE i % 4 WHEN 0 THEN NULL ELSE ? END FROM g`, jobs, now-int64(jobs), now, now)
	exec(`INSERT INTO backwave_job_tag (job_id, key, value) SELECT id, 'tenant', 't' || (id % 1000) FROM backwave_job`)
	exec(`ANALYZE`)

	drainDB, err := sql.Open("sqlite", dsn(path, s.opts, true))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = drainDB.Close() }()
	drainDB.SetMaxOpenConns(1)
	var (
		tl    storetest.StallTimeline
		edges atomic.Bool // the drain's reports count Dependency edges
	)
	drainCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { sqliteDrain(drainCtx, drainDB, &tl, &edges) })
	defer func() { stop(); wg.Wait() }()

	window := func(name string, fn func() error) {
		t.Helper()
		if err := tl.Window(name, fn); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// A pause between windows, so that an operation a migration held
		// up ends before the next window opens and is counted in its own.
		<-time.After(time.Second)
	}
	window("no migration (2 s)", func() error { <-time.After(2 * time.Second); return nil })
	for k := 2; k <= len(migrations); k++ {
		m := migrations[k-1]
		if m.version == 5 {
			// Dependency edges, half as many as jobs, before the last
			// migration: the realistic file it meets.
			exec(`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?)
INSERT INTO backwave_job_dependency (job_id, parent_id, mode, counted) SELECT i + 1, i, 0, i % 10 <> 0 FROM g`, jobs/2)
			// The drain's next commit checkpoints these pages: let it,
			// before the window opens.
			<-time.After(time.Second)
		}
		window(m.name, func() error { _, err := s.migrate(ctx, migrations[:k]); return err })
		edges.Store(m.version >= 3)
	}
	for _, line := range tl.Report() {
		t.Log(line)
	}
}

// sqliteDrain claims batches of ten jobs and reports them succeeded until
// ctx is done, each in a write transaction of its own on db, timing each on
// tl. Its statements fit every schema from version 1 on; once edges is set
// (backwave_job_dependency exists), a report also counts the edges of the
// jobs it finishes, as the store's reports do.
func sqliteDrain(ctx context.Context, db *sql.DB, tl *storetest.StallTimeline, edges *atomic.Bool) {
	write := func(fn func(tx *sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	for ctx.Err() == nil {
		var ids []int64
		start := time.Now()
		err := write(func(tx *sql.Tx) error {
			now := micros(time.Now())
			rows, err := tx.QueryContext(ctx, `UPDATE backwave_job SET state = 3, attempt = attempt + 1, worker = 'drain', lease_expires_at = ?
WHERE id IN (SELECT id FROM backwave_job WHERE state = 1 AND queue = 'q' AND scheduled_at <= ? ORDER BY scheduled_at, id LIMIT 10)
RETURNING id`, now+int64(5*time.Minute/time.Microsecond), now)
			if err != nil {
				return err
			}
			defer func() { _ = rows.Close() }()
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return rows.Err()
		})
		if ctx.Err() != nil {
			return
		}
		tl.Op(start, err)
		if len(ids) == 0 {
			continue
		}
		list, _ := json.Marshal(ids)
		start = time.Now()
		err = write(func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE backwave_job SET state = 4, worker = NULL, lease_expires_at = NULL, finalized_at = ?
WHERE id IN (SELECT value FROM json_each(?)) AND worker = 'drain' AND state = 3`, micros(time.Now()), string(list)); err != nil {
				return err
			}
			if !edges.Load() {
				return nil
			}
			_, err := tx.ExecContext(ctx, `UPDATE backwave_job_dependency SET counted = 1
WHERE parent_id IN (SELECT value FROM json_each(?)) AND counted = 0`, string(list))
			return err
		})
		if ctx.Err() != nil {
			return
		}
		tl.Op(start, err)
	}
}
