package postgres_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// The per-job cost ledger: what one noop job costs the database on its
// happy path (JobInsertMany → JobClaim → OutcomeReport Succeeded, the
// default History Policy), pinned in testdata/ledger.txt. A change that
// raises a line fails TestLedger naming the line; one that lowers it fails
// too, so the gain is pinned. Updating the file is deliberate: run
//
//	go test ./store/postgres -run TestLedger -update-ledger
//
// (or BACKWAVE_UPDATE_LEDGER=1) and say in the commit why the cost moved.
//
// Every count is the test's own, whatever else runs on the shared server:
//   - statements: a pgx tracer on the store's pool counts each query,
//     batch query and COPY it sends (BEGIN and COMMIT included; the
//     transactions line counts the BEGINs);
//   - rows inserted, updated (HOT among them) and deleted:
//     pg_stat_user_tables of the test's own schema, each pool connection
//     first made to flush its pending counts (pg_stat_force_next_flush and
//     one more statement);
//   - trigger invocations: pg_stat_user_functions of the schema, the pool's
//     sessions running with track_functions = pl (so the test needs a
//     superuser, and skips without one);
//   - WAL bytes: pg_walinspect's records between the phase's first and last
//     LSN, only those touching one of the schema's relations or written by
//     a transaction that did, without full-page images (whose number
//     depends on when the server last checkpointed). Heap and index page
//     layout can shift a record by a few bytes, so this line alone has a
//     tolerance of walTolerance;
//   - allocations: the Go heap allocations of the store call itself
//     (runtime.MemStats.Mallocs around it), what the application's process
//     pays per job on this path. Buffer reuse in pgx and sync.Pool make
//     them move a little, so they have allocTolerance (5 %; two runs agree to 0.1 %); the race detector
//     changes them (sync.Pool drops items on purpose), so a -race build
//     leaves these lines out and CI checks them in a run without it.
var updateLedger = flag.Bool("update-ledger", false, "rewrite testdata/ledger.txt with the costs measured now")

const (
	ledgerJobs   = 1000
	ledgerBatch  = 100 // jobs per claim and per report, a Worker Group's batch
	ledgerFile   = "testdata/ledger.txt"
	walTolerance = 0.05
	// allocTolerance is the allocation lines' slack, as a fraction.
	allocTolerance = 0.05
)

// mallocs is the process's count of heap allocations so far.
func mallocs() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.Mallocs)
}

// statementCounter is the pool's tracer.
type statementCounter struct {
	mu                sync.Mutex
	statements, begin int64
}

func (c *statementCounter) count(sql string) {
	c.mu.Lock()
	c.statements++
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(sql)), "begin") {
		c.begin++
	}
	c.mu.Unlock()
}

func (c *statementCounter) take() (statements, begin int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	statements, begin = c.statements, c.begin
	c.statements, c.begin = 0, 0
	return statements, begin
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.count(d.SQL)
	return ctx
}
func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *statementCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.count(d.SQL)
}
func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (c *statementCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.count("copy")
	return ctx
}
func (c *statementCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// ledgerSnap is the schema's cumulative counters at one moment.
type ledgerSnap struct {
	ins, upd, hot, del, calls int64
	lsn                       string
}

type ledgerEnv struct {
	t      *testing.T
	admin  *pgx.Conn
	pool   *pgxpool.Pool
	schema string
	tracer *statementCounter
}

// flush makes every connection of the pool publish its pending statistics.
func (e *ledgerEnv) flush(ctx context.Context) {
	e.t.Helper()
	// The pool's own health check may hold a connection for a moment;
	// the store holds none between calls.
	var conns []*pgxpool.Conn
	for try := 0; ; try++ {
		conns = e.pool.AcquireAllIdle(ctx)
		total := e.pool.Stat().TotalConns()
		if int(total) == len(conns) {
			break
		}
		for _, c := range conns {
			c.Release()
		}
		if try == 50 {
			e.t.Fatalf("flush: %d of the pool's %d connections are idle after 50 tries; the store should hold none between calls", len(conns), total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for _, c := range conns {
		// The flag takes effect when the backend next goes idle, so a
		// second statement on the same session runs after the flush.
		if _, err := c.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
			e.t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *ledgerEnv) snap(ctx context.Context) ledgerSnap {
	e.t.Helper()
	e.flush(ctx)
	_, _ = e.tracer.take() // the flush's own statements
	var s ledgerSnap
	err := e.admin.QueryRow(ctx, `SELECT
		coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0), coalesce(sum(n_tup_hot_upd), 0), coalesce(sum(n_tup_del), 0),
		(SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE schemaname = $1),
		pg_current_wal_flush_lsn()::text
		FROM pg_stat_user_tables WHERE schemaname = $1`, e.schema).Scan(&s.ins, &s.upd, &s.hot, &s.del, &s.calls, &s.lsn)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// walBytes sums the WAL, without full-page images, that the schema's
// relations and the transactions touching them wrote from lsn a to b.
func (e *ledgerEnv) walBytes(ctx context.Context, a, b string) int64 {
	e.t.Helper()
	var n int64
	err := e.admin.QueryRow(ctx, `
		WITH rels AS (
			SELECT c.relfilenode::text AS node FROM pg_class c
			WHERE c.relnamespace = $1::regnamespace AND c.relfilenode <> 0
			UNION
			SELECT t.relfilenode::text FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid
			WHERE c.relnamespace = $1::regnamespace
			UNION
			SELECT i.relfilenode::text FROM pg_class c JOIN pg_index x ON x.indrelid = c.reltoastrelid JOIN pg_class i ON i.oid = x.indexrelid
			WHERE c.relnamespace = $1::regnamespace
		), recs AS (
			SELECT start_lsn, xid, record_length, fpi_length, block_ref FROM pg_get_wal_records_info($2::pg_lsn, $3::pg_lsn)
		), mine AS (
			SELECT DISTINCT r.start_lsn, r.xid FROM recs r, regexp_matches(coalesce(r.block_ref, ''), 'rel \d+/\d+/(\d+)', 'g') AS m(node)
			WHERE m.node[1] IN (SELECT node FROM rels)
		)
		SELECT coalesce(sum(record_length - fpi_length), 0) FROM recs
		WHERE start_lsn IN (SELECT start_lsn FROM mine)
		   OR (xid <> 0 AND xid IN (SELECT xid FROM mine WHERE xid <> 0))`, e.schema, a, b).Scan(&n)
	if err != nil {
		e.t.Fatalf("read the WAL with pg_walinspect: %v", err)
	}
	return n
}

type pgPhase struct {
	name                   string
	statements, begins     int64
	ins, upd, hot, del, fn int64
	wal                    int64
	allocs                 int64
}

func TestLedger(t *testing.T) {
	url := testURL(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var super bool
	if err := admin.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil {
		t.Fatal(err)
	}
	if !super {
		t.Skip("the ledger needs a superuser: it sets track_functions and reads the WAL through pg_walinspect")
	}
	if _, err := admin.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		// Two test processes creating it at once: one wins.
		var ok bool
		if qerr := admin.QueryRow(ctx, "SELECT count(*) = 1 FROM pg_extension WHERE extname = 'pg_walinspect'").Scan(&ok); qerr != nil || !ok {
			t.Fatalf("the ledger reads the WAL through pg_walinspect (PostgreSQL contrib): %v", err)
		}
	}

	schema := randomSchema(t)
	dropSchemaAtCleanup(t, url, schema)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	tracer := &statementCounter{}
	cfg.ConnConfig.Tracer = tracer
	cfg.ConnConfig.RuntimeParams["track_functions"] = "pl"
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := postgres.OpenPool(ctx, pool, postgres.Options{Schema: schema, DisableListener: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	e := &ledgerEnv{t: t, admin: admin, pool: pool, schema: schema, tracer: tracer}

	prev := e.snap(ctx)
	var phases []pgPhase
	end := func(name string, statements, begins, allocs int64) {
		now := e.snap(ctx)
		phases = append(phases, pgPhase{
			name: name, statements: statements, begins: begins, allocs: allocs,
			ins: now.ins - prev.ins, upd: now.upd - prev.upd, hot: now.hot - prev.hot, del: now.del - prev.del, fn: now.calls - prev.calls,
			wal: e.walBytes(ctx, prev.lsn, now.lsn),
		})
		prev = e.snap(ctx) // after the WAL read, which writes nothing of the schema's
	}

	jobs := make([]store.NewJob, ledgerJobs)
	for i := range jobs {
		jobs[i] = store.NewJob{WireName: "ledger_noop", Queue: "ledger", Payload: []byte(`{}`), MaxAttempts: 3}
	}
	a0 := mallocs()
	if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	allocs := mallocs() - a0
	st, b := tracer.take()
	end("enqueue", st, b, allocs)

	// Claims and reports alternate, batch by batch, as a Worker Group's
	// do; each phase is the sum of its batches.
	var claim, report pgPhase
	for done := 0; done < ledgerJobs; {
		a0 := mallocs()
		got, err := s.JobClaim(ctx, store.ClaimParams{Worker: "ledger", Queues: []string{"ledger"}, Limit: ledgerBatch, LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		allocs := mallocs() - a0
		if len(got) == 0 {
			t.Fatalf("claim returned nothing after %d of %d jobs", done, ledgerJobs)
		}
		st, b := tracer.take()
		end("claim", st, b, allocs)
		claim = claim.plus(phases[len(phases)-1])
		phases = phases[:len(phases)-1]
		outs := make([]store.Outcome, len(got))
		for i, j := range got {
			outs[i] = store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}, core.ResultSucceeded, core.DefaultRetryPolicy())}
		}
		a0 = mallocs()
		if _, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "ledger", Outcomes: outs}); err != nil {
			t.Fatal(err)
		}
		allocs = mallocs() - a0
		st, b = tracer.take()
		end("report", st, b, allocs)
		report = report.plus(phases[len(phases)-1])
		phases = phases[:len(phases)-1]
		done += len(got)
	}
	claim.name, report.name = "claim", "report"
	phases = append(phases, claim, report)
	var total pgPhase
	for _, p := range phases {
		total = total.plus(p)
	}
	total.name = "total"
	phases = append(phases, total)
	got := map[string]float64{}
	for _, p := range phases {
		per := func(n int64) float64 { return float64(n) / ledgerJobs }
		got[p.name+".statements"] = per(p.statements)
		got[p.name+".transactions"] = per(p.begins)
		got[p.name+".rows_inserted"] = per(p.ins)
		got[p.name+".rows_updated"] = per(p.upd)
		got[p.name+".rows_updated_hot"] = per(p.hot)
		got[p.name+".rows_deleted"] = per(p.del)
		got[p.name+".trigger_calls"] = per(p.fn)
		got[p.name+".wal_bytes"] = per(p.wal)
		if !raceEnabled {
			got[p.name+".allocs"] = per(p.allocs)
		}
	}
	checkLedger(t, got)
}

func (a pgPhase) plus(b pgPhase) pgPhase {
	return pgPhase{
		name: a.name, statements: a.statements + b.statements, begins: a.begins + b.begins,
		ins: a.ins + b.ins, upd: a.upd + b.upd, hot: a.hot + b.hot, del: a.del + b.del, fn: a.fn + b.fn, wal: a.wal + b.wal,
		allocs: a.allocs + b.allocs,
	}
}

// checkLedger compares the measured lines with the pinned file, or
// rewrites it under -update-ledger. Counts must match exactly; WAL bytes
// within walTolerance.
func checkLedger(t *testing.T, got map[string]float64) {
	t.Helper()
	if *updateLedger || os.Getenv("BACKWAVE_UPDATE_LEDGER") == "1" {
		writeLedger(t, got)
		t.Logf("%s rewritten (-update-ledger): say in the commit why the cost moved", ledgerFile)
		return
	}
	pinned := readLedger(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	})
	var fails []string
	for _, name := range names {
		want, ok := pinned[name]
		slack := 1e-9
		switch {
		case strings.HasSuffix(name, ".wal_bytes"):
			slack = math.Max(want*walTolerance, 1)
		case strings.HasSuffix(name, ".allocs"):
			slack = math.Max(want*allocTolerance, 0.1)
		}
		switch {
		case !ok:
			fails = append(fails, fmt.Sprintf("ledger line %q is missing from %s (measured %.3f per job)", name, ledgerFile, got[name]))
		case got[name] > want+slack:
			fails = append(fails, fmt.Sprintf("ledger line %q rose: %.3f per job, pinned %.3f", name, got[name], want))
		case got[name] < want-slack:
			fails = append(fails, fmt.Sprintf("ledger line %q fell: %.3f per job, pinned %.3f (pin the gain)", name, got[name], want))
		}
	}
	if len(fails) > 0 {
		t.Fatalf("the per-job cost ledger moved (%d jobs, claims and reports of %d):\n  %s\nIf the change is meant, rerun with -update-ledger (or BACKWAVE_UPDATE_LEDGER=1) and say why in the commit.",
			ledgerJobs, ledgerBatch, strings.Join(fails, "\n  "))
	}
}

func readLedger(t *testing.T) map[string]float64 {
	t.Helper()
	f, err := os.Open(ledgerFile)
	if err != nil {
		t.Fatalf("read the ledger: %v (create it with -update-ledger)", err)
	}
	defer func() { _ = f.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, v, ok := strings.Cut(line, " ")
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !ok || err != nil {
			t.Fatalf("%s:%d: %q: want a name and a number", ledgerFile, n, line)
		}
		out[name] = x
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func writeLedger(t *testing.T, got map[string]float64) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# The per-job cost ledger of store/postgres: %d noop jobs through JobInsertMany (one call),\n", ledgerJobs)
	fmt.Fprintf(&b, "# JobClaim and OutcomeReport Succeeded in batches of %d, the default History Policy; every\n", ledgerBatch)
	b.WriteString("# number is per job. wal_bytes leaves out full-page images and may move by 5 %, allocs (the\n")
	b.WriteString("# store call's Go heap allocations, checked without -race) by 5 %; the rest are exact.\n")
	b.WriteString("# Written by TestLedger -update-ledger: change it only on purpose, and say in the\n")
	b.WriteString("# commit why the cost moved.\n")
	var names []string
	for k := range got {
		names = append(names, k)
	}
	order := map[string]int{"enqueue": 0, "claim": 1, "report": 2, "total": 3}
	slices.SortFunc(names, func(a, b string) int {
		pa, _, _ := strings.Cut(a, ".")
		pb, _, _ := strings.Cut(b, ".")
		if order[pa] != order[pb] {
			return order[pa] - order[pb]
		}
		return strings.Compare(a, b)
	})
	for _, k := range names {
		fmt.Fprintf(&b, "%s %.3f\n", k, got[k])
	}
	if err := os.MkdirAll(filepath.Dir(ledgerFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ledgerFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
