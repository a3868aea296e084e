package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/store"
)

// The per-job cost ledger: what one noop job costs the database on its
// happy path (JobInsertMany → JobClaim → OutcomeReport Succeeded, the
// default History Policy), counted exactly and pinned in
// testdata/ledger.txt. A change that raises a line fails TestLedger naming
// the line; one that lowers it fails too, so the gain is pinned. Updating
// the file is deliberate: run
//
//	go test ./store/sqlite -run TestLedger -update-ledger
//
// (or BACKWAVE_UPDATE_LEDGER=1) and say in the commit why the cost moved.
//
// The counts come from the store's own connections only, so nothing else
// on the machine perturbs them: every statement the store's *sql.DB pools
// execute passes a counting driver wrapper (statements, and the
// transactions among them), and SQLite's pre-update hook on the same
// connections counts each row inserted, updated and deleted, and of those
// the rows a trigger program wrote (sqlite3_preupdate_depth > 0). SQLite
// keeps no count of trigger invocations, so the ledger's trigger line is
// the rows triggers wrote.
var updateLedger = flag.Bool("update-ledger", false, "rewrite testdata/ledger.txt with the costs measured now")

const (
	ledgerJobs  = 1000
	ledgerBatch = 100 // jobs per claim and per report, a Worker Group's batch
	ledgerFile  = "testdata/ledger.txt"
)

// ledgerCounts is one phase's counters.
type ledgerCounts struct {
	statements, transactions              int64
	inserted, updated, deleted, byTrigger int64
}

// ledgerMeter counts on the connections of one store.
type ledgerMeter struct {
	mu sync.Mutex
	c  ledgerCounts
}

func (m *ledgerMeter) add(f func(c *ledgerCounts)) {
	m.mu.Lock()
	f(&m.c)
	m.mu.Unlock()
}

func (m *ledgerMeter) take() ledgerCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.c
	m.c = ledgerCounts{}
	return c
}

// ledgerConnector opens modernc.org/sqlite connections wrapped to count.
type ledgerConnector struct {
	dsn string
	m   *ledgerMeter
}

func (lc ledgerConnector) Connect(context.Context) (driver.Conn, error) {
	c, err := (&msqlite.Driver{}).Open(lc.dsn)
	if err != nil {
		return nil, err
	}
	c.(msqlite.HookRegisterer).RegisterPreUpdateHook(func(d msqlite.SQLitePreUpdateData) {
		depth := d.Depth()
		lc.m.add(func(c *ledgerCounts) {
			switch d.Op {
			case 18: // SQLITE_INSERT
				c.inserted++
			case 23: // SQLITE_UPDATE
				c.updated++
			case 9: // SQLITE_DELETE
				c.deleted++
			}
			if depth > 0 {
				c.byTrigger++
			}
		})
	})
	return &ledgerConn{Conn: c, m: lc.m}, nil
}

func (lc ledgerConnector) Driver() driver.Driver { return &msqlite.Driver{} }

// ledgerConn counts each statement executed on it and on its prepared
// statements; BEGIN, COMMIT and ROLLBACK count as statements too.
type ledgerConn struct {
	driver.Conn
	m *ledgerMeter
}

func (c *ledgerConn) count(tx bool) {
	c.m.add(func(k *ledgerCounts) {
		k.statements++
		if tx {
			k.transactions++
		}
	})
}

func (c *ledgerConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.count(false)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *ledgerConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.count(false)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *ledgerConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	s, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return &ledgerStmt{Stmt: s, c: c}, nil
}

func (c *ledgerConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.count(true)
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return ledgerTx{Tx: tx, c: c}, nil
}

func (c *ledgerConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *ledgerConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

type ledgerTx struct {
	driver.Tx
	c *ledgerConn
}

func (t ledgerTx) Commit() error   { t.c.count(false); return t.Tx.Commit() }
func (t ledgerTx) Rollback() error { t.c.count(false); return t.Tx.Rollback() }

type ledgerStmt struct {
	driver.Stmt
	c *ledgerConn
}

func (s *ledgerStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.c.count(false)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *ledgerStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.c.count(false)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// openLedgerStore is Open with both of the store's pools on counting
// connections: connect's pools, rebuilt on ledgerConnector with the same
// DSNs and limits, then start and prepareHot as Open runs them.
func openLedgerStore(t *testing.T, m *ledgerMeter) *Store {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := connect(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.w.Close()
	_ = s.r.Close()
	s.w = sql.OpenDB(ledgerConnector{dsn: dsn(path, s.opts, true), m: m})
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	s.r = sql.OpenDB(ledgerConnector{dsn: dsn(path, s.opts, false), m: m})
	s.r.SetMaxOpenConns(s.opts.ReadConns)
	s.r.SetMaxIdleConns(s.opts.ReadConns)
	if err := s.start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.prepareHot(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestLedger runs ledgerJobs noop jobs through the happy path and checks
// each phase's counts per job against testdata/ledger.txt.
func TestLedger(t *testing.T) {
	ctx := context.Background()
	m := &ledgerMeter{}
	s := openLedgerStore(t, m)
	m.take() // migration and preparation are not the jobs' cost

	var phases []ledgerPhase
	jobs := make([]store.NewJob, ledgerJobs)
	for i := range jobs {
		jobs[i] = store.NewJob{WireName: "ledger_noop", Queue: "ledger", Payload: []byte(`{}`), MaxAttempts: 3}
	}
	if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	phases = append(phases, ledgerPhase{"enqueue", m.take()})

	var claim, report ledgerCounts
	for done := 0; done < ledgerJobs; {
		got, err := s.JobClaim(ctx, store.ClaimParams{Worker: "ledger", Queues: []string{"ledger"}, Limit: ledgerBatch, LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Fatalf("claim returned nothing after %d of %d jobs", done, ledgerJobs)
		}
		claim = claim.plus(m.take())
		outs := make([]store.Outcome, len(got))
		for i, j := range got {
			outs[i] = store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}, core.ResultSucceeded, core.DefaultRetryPolicy())}
		}
		if _, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "ledger", Outcomes: outs}); err != nil {
			t.Fatal(err)
		}
		report = report.plus(m.take())
		done += len(got)
	}
	phases = append(phases, ledgerPhase{"claim", claim}, ledgerPhase{"report", report})
	checkLedger(t, ledgerLines(phases))
}

type ledgerPhase struct {
	name string
	c    ledgerCounts
}

func (a ledgerCounts) plus(b ledgerCounts) ledgerCounts {
	return ledgerCounts{
		statements: a.statements + b.statements, transactions: a.transactions + b.transactions,
		inserted: a.inserted + b.inserted, updated: a.updated + b.updated,
		deleted: a.deleted + b.deleted, byTrigger: a.byTrigger + b.byTrigger,
	}
}

// ledgerLines turns the phases' counts into the ledger's lines, per job,
// with the whole path's totals last.
func ledgerLines(phases []ledgerPhase) map[string]float64 {
	out := map[string]float64{}
	var total ledgerCounts
	put := func(name string, c ledgerCounts) {
		per := func(n int64) float64 { return float64(n) / ledgerJobs }
		out[name+".statements"] = per(c.statements)
		out[name+".transactions"] = per(c.transactions)
		out[name+".rows_inserted"] = per(c.inserted)
		out[name+".rows_updated"] = per(c.updated)
		out[name+".rows_deleted"] = per(c.deleted)
		out[name+".rows_by_triggers"] = per(c.byTrigger)
	}
	for _, p := range phases {
		put(p.name, p.c)
		total = total.plus(p.c)
	}
	put("total", total)
	return out
}

// checkLedger compares the measured lines with the pinned file, or
// rewrites it under -update-ledger.
func checkLedger(t *testing.T, got map[string]float64) {
	t.Helper()
	if *updateLedger || os.Getenv("BACKWAVE_UPDATE_LEDGER") == "1" {
		writeLedger(t, got)
		t.Logf("%s rewritten (-update-ledger): say in the commit why the cost moved", ledgerFile)
		return
	}
	pinned := readLedger(t)
	var fails []string
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	}) {
		want, ok := pinned[name]
		switch {
		case !ok:
			fails = append(fails, fmt.Sprintf("ledger line %q is missing from %s (measured %.3f per job)", name, ledgerFile, got[name]))
		case got[name] > want+1e-9:
			fails = append(fails, fmt.Sprintf("ledger line %q rose: %.3f per job, pinned %.3f", name, got[name], want))
		case got[name] < want-1e-9:
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
	fmt.Fprintf(&b, "# The per-job cost ledger of store/sqlite: %d noop jobs through JobInsertMany (one call),\n", ledgerJobs)
	fmt.Fprintf(&b, "# JobClaim and OutcomeReport Succeeded in batches of %d, the default History Policy; every\n", ledgerBatch)
	b.WriteString("# number is per job. Written by TestLedger -update-ledger: change it only on purpose,\n")
	b.WriteString("# and say in the commit why the cost moved.\n")
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

func (c *ledgerConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }
