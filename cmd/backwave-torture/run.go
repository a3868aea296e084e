package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/cmd/backwave-torture/audit"
	"github.com/backwave/backwave/cmd/backwave-torture/journal"
	"github.com/backwave/backwave/internal/privatedb"
	"github.com/backwave/backwave/store"
)

// The targets.
const (
	targetPostgres = "postgres"
	targetSQLite   = "sqlite"
	targetMariaDB  = "mariadb"
	targetGalera   = "galera"
	// targetPostgresHA is PostgreSQL as a Patroni cluster that fails over
	// under load; its children run as on targetPostgres.
	targetPostgresHA = "postgres-ha"
)

// The planted faults of --plant: each makes the torture's own journal,
// handler side or reader misbehave so that one audit must report it.
const (
	plantDropJournal  = "drop-journal"  // the producer journals nothing of one batch → unexpected
	plantPhantomAck   = "phantom-ack"   // the producer journals an acknowledgement never given → lost
	plantDoubleApply  = "double-apply"  // a worker re-sends outcomes through a second connection, journaled applied → double_apply
	plantSkipFence    = "skip-fence"    // a worker journals an applied outcome under a worker that never held the Lease → fence
	plantLeakSlot     = "leak-slot"     // the reader records a Running count above the limit → limit_exceeded
	plantPauseForever = "pause-forever" // the operator leaves a Queue paused after the faults stop → liveness
)

var plants = []string{plantDropJournal, plantPhantomAck, plantDoubleApply, plantSkipFence, plantLeakSlot, plantPauseForever}

// options are the coordinator's flags.
type options struct {
	target    string
	short     bool
	smoke     bool
	dur       time.Duration
	seed      uint64
	pgURL     string
	pgPort    int
	mdbPort   int
	workers   int
	dir       string
	plant     string
	report    string
	rate      float64
	burst     int
	liveness  time.Duration
	walBound  int64
	command   string
	handlerMs int
	async     bool
}

// coordinator runs one torture run.
type coordinator struct {
	o       options
	out     io.Writer
	dir     string
	jdir    string
	uri     string
	pgBase  string // superuser connection string of the private cluster
	schema  string
	cluster *privatedb.Postgres
	mdb     *privatedb.MariaDB
	mdbDSN  string // root's DSN on the private MariaDB's database
	galera  *privatedb.Galera
	ha      *privatedb.Patroni
	hastate haState
	nodeMu  sync.Mutex // one node crash at a time
	j       *journal.Writer
	s       store.Store
	admin   *backwave.Admin
	fl      *fleet
	sched   schedule
	cells   []cell
	group   groupConfig
	start   time.Time

	mu     sync.Mutex
	waits  map[string]map[string]int // cell → wait event → samples
	walMax int64
}

// run performs the whole run and returns the violations found.
func run(ctx context.Context, o options, out io.Writer) ([]audit.Violation, error) {
	c := &coordinator{o: o, out: out, waits: map[string]map[string]int{}}
	c.group = groupConfig{Lease: 5 * time.Second, Heartbeat: 1500 * time.Millisecond, Poll: 500 * time.Millisecond, Maintenance: time.Second, Pool: 8}
	if err := c.setup(ctx); err != nil {
		c.teardown()
		return nil, err
	}
	defer c.teardown()
	healedAt, err := c.chaos(ctx)
	if err != nil {
		return nil, err
	}
	recovered := c.heal(ctx, healedAt)
	return c.finish(ctx, healedAt, recovered)
}

func (c *coordinator) logf(format string, args ...any) {
	fmt.Fprintf(c.out, "%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// setup makes the directories and the database, opens the coordinator's
// store, draws the schedule and starts the fleet.
func (c *coordinator) setup(ctx context.Context) error {
	var err error
	c.dir = c.o.dir
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "backwave-torture-"); err != nil {
			return fmt.Errorf("work directory: %w", err)
		}
	}
	c.jdir = filepath.Join(c.dir, "journal")
	for _, d := range []string{c.jdir, filepath.Join(c.dir, "log")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("work directory: %w", err)
		}
	}
	c.logf("work directory %s", c.dir)
	if c.j, err = journal.Create(c.jdir, "coordinator"); err != nil {
		return err
	}
	switch c.o.target {
	case targetSQLite:
		c.uri = "sqlite://" + filepath.Join(c.dir, "torture.db") + "?busy_timeout=30s"
	case targetPostgres:
		c.schema = fmt.Sprintf("torture_%d", c.o.seed%1_000_000)
		if c.o.pgURL != "" {
			c.pgBase = c.o.pgURL
		} else {
			if c.cluster, err = startPrivate(ctx, filepath.Join(c.dir, "pg"), c.dir, c.o.pgPort); err != nil {
				return err
			}
			c.pgBase = c.cluster.URL("postgres")
			c.logf("private PostgreSQL cluster on 127.0.0.1:%d, run as the %s OS user", c.o.pgPort, c.cluster.Account().Name)
		}
		c.uri = c.pgBase + "&schema=" + c.schema + "&pool_max_conns=4"
	case targetPostgresHA:
		c.schema = fmt.Sprintf("torture_%d", c.o.seed%1_000_000)
		if c.ha, err = startPrivateHA(ctx, haDir(c.dir), c.dir, c.o.pgPort, c.o.async); err != nil {
			return err
		}
		c.pgBase = c.ha.URL("postgres")
		c.logf("private Patroni cluster: PostgreSQL on 127.0.0.1:%d and :%d, run as the %s OS user; clients use %s", c.o.pgPort, c.o.pgPort+1, c.ha.Account().Name, c.pgBase)
		c.uri = c.pgBase + "&schema=" + c.schema + "&pool_max_conns=4"
	case targetMariaDB, targetGalera:
		if err := c.setupMariaDB(ctx); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--target %q: want postgres, mariadb or sqlite", c.o.target)
	}
	if c.s, err = openStore(ctx, c.uri); err != nil {
		return err
	}
	if c.admin, err = backwave.NewAdmin(c.s, "torture-coordinator", backwave.WithQueueSetup()); err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	c.j.Write(journal.Entry{Kind: journal.KindLimit, Q: queueLim, N: 4, Note: "intent"})
	if err := c.admin.SetQueueLimit(ctx, queueLim, 4); err != nil {
		return fmt.Errorf("set the initial limit: %w", err)
	}
	c.j.Write(journal.Entry{Kind: journal.KindLimit, Q: queueLim, N: 4, Note: "ack"})

	chaos := c.o.dur - min(c.o.dur/4, 3*time.Minute)
	c.sched = plan(c.o.seed, c.o.target, chaos)
	fmt.Fprint(c.out, c.sched.String())
	if err := os.WriteFile(filepath.Join(c.dir, "schedule.txt"), []byte(c.sched.String()), 0o644); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	c.start = time.Now().Add(5 * time.Second)
	for _, cp := range c.sched.Cells {
		c.cells = append(c.cells, cell{Name: cp.Name, From: c.start.Add(cp.Start), To: c.start.Add(cp.Start + cp.Dur)})
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("re-exec: %w", err)
	}
	base := childConfig{
		URI: c.uri, Dir: c.jdir, Target: childTarget(c.o.target), Seed: c.o.seed, Plant: c.o.plant,
		Group: c.group, Cells: c.cells, Rate: c.o.rate, Burst: c.o.burst,
		HandlerMax: time.Duration(c.o.handlerMs) * time.Millisecond,
	}
	c.fl = newFleet(bin, base, filepath.Join(c.dir, "log"))
	for i := 1; i <= c.o.workers; i++ {
		if _, err := c.fl.start(fmt.Sprintf("w%d", i), roleWorker, false, c.workerNode(i)); err != nil {
			return err
		}
	}
	for _, r := range []string{roleProducer, roleOperator, roleReader} {
		if _, err := c.fl.start(r, r, false, nil); err != nil {
			return err
		}
	}
	return nil
}

// teardown stops every child and the private cluster.
func (c *coordinator) teardown() {
	if c.fl != nil {
		for _, p := range c.fl.all() {
			p.kill()
		}
	}
	if c.s != nil {
		_ = c.s.Close()
	}
	if c.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.cluster.Stop(ctx, privatedb.Fast); err != nil {
			c.logf("stop the private cluster: %v", err)
		}
	}
	if c.ha != nil {
		if err := c.ha.Stop(); err != nil {
			c.logf("stop the private Patroni cluster: %v", err)
		}
	}
	c.stopMariaDB()
	if c.j != nil {
		_ = c.j.Close()
	}
}

// fault journals an injected fault.
func (c *coordinator) fault(kind string, from time.Time, detail string) {
	end := int64(0)
	if d := time.Since(from); d > 50*time.Millisecond {
		end = time.Now().UnixNano()
	}
	c.j.Write(journal.Entry{T: from.UnixNano(), Kind: journal.KindFault, Note: kind, End: end, Detail: detail})
}

// chaos runs the schedule: the cells' span faults and every instant fault,
// while samplers watch the store. It returns when the faults stop.
func (c *coordinator) chaos(ctx context.Context) (time.Time, error) {
	end := c.start.Add(c.sched.Chaos)
	cctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { c.sample(cctx) })
	for _, cl := range c.cells {
		wg.Go(func() { c.runCell(cctx, cl) })
	}
	r := rand.New(rand.NewPCG(c.o.seed, 0xfa17))
	for _, ev := range c.sched.Events {
		if !sleepCtx(cctx, time.Until(c.start.Add(ev.At))) {
			break
		}
		switch ev.Kind {
		case faultKill9:
			c.kill9(r)
		case faultTerminate:
			from := time.Now()
			n, err := terminate(cctx, c.pgBase, ev.N)
			c.fault(faultTerminate, from, fmt.Sprintf("%d backends ended (%v)", n, errOrNil(err)))
		case faultListenKill:
			from := time.Now()
			n, err := killListeners(cctx, c.pgBase)
			c.fault(faultListenKill, from, fmt.Sprintf("%d LISTEN backends ended (%v)", n, errOrNil(err)))
		case faultRestart, faultMariaRestart, faultCrash:
			c.restartServer(ctx, ev.Kind)
		case faultNodeCrash:
			wg.Go(func() { c.crashNode(ctx, r) })
		case faultFailover:
			wg.Go(func() { c.failover(ctx) })
		case faultKillConn:
			from := time.Now()
			n, err := mariaKill(cctx, c.mdbDSN, ev.N)
			c.fault(faultKillConn, from, fmt.Sprintf("%d connections killed (%v)", n, errOrNil(err)))
		case faultKillInTx:
			wg.Go(func() { c.killInTx(cctx) })
		case faultFreeze:
			slot := fmt.Sprintf("w%d", 1+r.IntN(c.o.workers))
			if p, ok := c.fl.get(slot); ok {
				wg.Go(func() { c.freeze(p) })
			}
		}
	}
	<-cctx.Done()
	wg.Wait()
	if ctx.Err() != nil {
		return time.Time{}, fmt.Errorf("run interrupted: %w", ctx.Err())
	}
	return time.Now(), nil
}

func errOrNil(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// kill9 SIGKILLs a random live worker and starts its next incarnation a
// moment later.
func (c *coordinator) kill9(r *rand.Rand) {
	slot := fmt.Sprintf("w%d", 1+r.IntN(c.o.workers))
	p, ok := c.fl.get(slot)
	if !ok || p.frozen.Load() {
		return
	}
	from := time.Now()
	p.kill()
	c.fault(faultKill9, from, p.name)
	edit := c.workerNode(slotNumber(slot))
	go func() {
		time.Sleep(time.Duration(500+r.IntN(1000)) * time.Millisecond)
		if _, err := c.fl.start(slot, roleWorker, false, edit); err != nil {
			c.logf("restart %s: %v", slot, err)
		}
	}()
}

// freeze stops p with SIGSTOP for freezeFor, past its Leases, and lets it
// go on: its late outcomes must be refused by the fence.
func (c *coordinator) freeze(p *proc) {
	if !p.frozen.CompareAndSwap(false, true) {
		return
	}
	defer p.frozen.Store(false)
	from := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return
	}
	time.Sleep(freezeFor)
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	c.fault(faultFreeze, from, p.name+" stopped "+freezeFor.String())
}

// killInTx starts a child that enqueues inside a transaction and SIGKILLs
// it while the transaction is open.
func (c *coordinator) killInTx(ctx context.Context) {
	p, err := c.fl.start("txkill", roleTxKill, true, nil)
	if err != nil {
		c.logf("kill_in_tx: %v", err)
		return
	}
	if err := p.waitLine(ctx, "in-tx", 60*time.Second); err != nil {
		c.logf("kill_in_tx: %v", err)
		p.kill()
		return
	}
	from := time.Now()
	p.kill()
	c.fault(faultKillInTx, from, p.name+" killed inside its write transaction")
}

// sample watches the run once a second: the SQLite write-ahead log's size,
// or PostgreSQL's wait events by cell.
func (c *coordinator) sample(ctx context.Context) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	wal := strings.TrimPrefix(strings.SplitN(c.uri, "?", 2)[0], "sqlite://") + "-wal"
	for sleepCtx(ctx, time.Second) {
		switch c.o.target {
		case targetSQLite:
			if fi, err := os.Stat(wal); err == nil {
				c.j.Write(journal.Entry{Kind: journal.KindWAL, N: fi.Size()})
				c.mu.Lock()
				c.walMax = max(c.walMax, fi.Size())
				c.mu.Unlock()
			}
		case targetPostgres, targetPostgresHA:
			if conn == nil || conn.IsClosed() {
				var err error
				if conn, err = sideConnect(ctx, c.pgBase); err != nil {
					conn = nil
					continue
				}
			}
			m, err := waitEvents(ctx, conn)
			if err != nil {
				_ = conn.Close(context.Background())
				conn = nil
				continue
			}
			name := "heal"
			if cl, ok := cellAt(c.cells, time.Now()); ok {
				name = cl.Name
			}
			c.mu.Lock()
			if c.waits[name] == nil {
				c.waits[name] = map[string]int{}
			}
			for k, n := range m {
				c.waits[name][k] += n
			}
			c.mu.Unlock()
		}
	}
}

// heal stops the producer and the operator (which resumes every Queue),
// makes sure every worker slot is running, and waits until every job is
// terminal or the liveness bound passes. It returns when the store was
// last seen with no live job (zero if never).
func (c *coordinator) heal(ctx context.Context, healedAt time.Time) time.Time {
	c.j.Write(journal.Entry{Kind: journal.KindPhase, Note: "heal"})
	c.logf("faults stopped; healing (liveness bound %s)", c.o.liveness)
	for _, slot := range []string{roleProducer, roleOperator} {
		if p, ok := c.fl.get(slot); ok {
			p.stop(45 * time.Second)
		}
	}
	for i := 1; i <= c.o.workers; i++ {
		slot := fmt.Sprintf("w%d", i)
		if _, ok := c.fl.get(slot); !ok {
			if _, err := c.fl.start(slot, roleWorker, false, c.workerNode(i)); err != nil {
				c.logf("restart %s: %v", slot, err)
			}
		}
	}
	deadline := healedAt.Add(c.o.liveness)
	last := -1
	for time.Now().Before(deadline) && ctx.Err() == nil {
		m, err := c.admin.CountByState(ctx, "")
		if err == nil {
			live := 0
			for st, n := range m {
				switch st {
				case backwave.StateSucceeded, backwave.StateDeadLettered, backwave.StateCancelled, backwave.StateQuarantined:
				default:
					live += n
				}
			}
			if live != last {
				c.logf("%d live jobs", live)
				last = live
			}
			if live == 0 {
				return time.Now()
			}
		}
		sleepCtx(ctx, time.Second)
	}
	return time.Time{}
}

// finish stops the fleet, reads the final state, runs the audits and
// writes the report.
func (c *coordinator) finish(ctx context.Context, healedAt, recovered time.Time) ([]audit.Violation, error) {
	for _, p := range c.fl.all() {
		p.stop(30 * time.Second)
	}
	finalAt := time.Now()
	jobs, qs, err := c.finalState(ctx)
	if err != nil {
		return nil, err
	}
	entries, torn, err := journal.ReadDir(c.jdir)
	if err != nil {
		return nil, err
	}
	var outages, holds []audit.Window
	for _, e := range entries {
		if e.Kind == journal.KindFault && e.Note == faultSnapshot {
			holds = append(holds, audit.Window{From: e.Time(), To: time.Unix(0, max(e.End, e.T))})
		}
		// A restart stops the store; a frozen worker may hold locks
		// (on SQLite the file's write lock) that stall everyone.
		if e.Kind == journal.KindFault && (e.Note == faultRestart || e.Note == faultMariaRestart || e.Note == faultCrash || e.Note == faultNodeCrash || e.Note == faultFreeze || e.Note == faultFailover) {
			to := time.Unix(0, max(e.End, e.T)).Add(5 * time.Second)
			outages = append(outages, audit.Window{From: e.Time(), To: to})
		}
	}
	// walSettle is how long after a reader lets go the log may take to be
	// reset and truncated: the next checkpoint that can complete, on a
	// store that keeps writing.
	const walSettle = time.Minute
	handlerMax := time.Duration(c.o.handlerMs) * time.Millisecond
	slack := 10 * time.Second
	p := audit.Params{
		Lease: c.group.Lease, Poll: c.group.Poll, Maintenance: c.group.Maintenance, Slack: slack,
		Outages:    outages,
		LimitGrace: handlerMax + c.group.Lease + c.group.Maintenance + c.group.Poll + slack,
		HealedAt:   healedAt, LivenessBound: c.o.liveness, FinalAt: finalAt,
	}
	if c.o.target == targetSQLite {
		p.WALBound, p.ReaderHolds, p.WALSettle = c.o.walBound, holds, walSettle
	}
	in := audit.Input{Entries: entries, Jobs: jobs, Queues: qs, Params: p}
	vs := audit.Run(in)
	rep := buildReport(c, in, torn, healedAt, recovered)
	rep.notes = append(rep.notes, c.galeraNotes(ctx)...)
	rep.notes = append(rep.notes, c.haNotes(entries)...)
	rep.notes = append(rep.notes, c.asyncLosses(entries, vs)...)
	rep.notes = append(rep.notes, childErrors(filepath.Join(c.dir, "log"))...)
	c.printViolations(in, vs)
	text := rep.markdown(vs)
	path := c.o.report
	if path == "" {
		path = filepath.Join(c.dir, "report.md")
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return vs, fmt.Errorf("report: %w", err)
	}
	fmt.Fprint(c.out, text)
	c.logf("report written to %s", path)
	return vs, nil
}

// printViolations prints, for a failed run, the seed, the schedule and
// the journal excerpt of each offending job (the first ten).
func (c *coordinator) printViolations(in audit.Input, vs []audit.Violation) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintf(c.out, "\nVIOLATIONS (seed %d; rerun with --seed %d --target %s)\n%s", c.o.seed, c.o.seed, c.o.target, c.sched.String())
	shown := 0
	for _, v := range vs {
		fmt.Fprintf(c.out, "  %s\n", v)
		if v.Job == 0 || shown >= 10 {
			continue
		}
		shown++
		for _, e := range audit.Excerpt(in.Entries, v.Job, 40) {
			fmt.Fprintf(c.out, "      %s %s\n", e.Time().UTC().Format("15:04:05.000"), e)
		}
		if j, ok := in.Jobs[v.Job]; ok {
			for _, t := range j.Log {
				fmt.Fprintf(c.out, "      log %s %s→%s by %s at attempt %d\n", t.At.UTC().Format("15:04:05.000"), t.From, t.State, t.Via, t.Attempt)
			}
		}
	}
}

// finalState reads every job, the Queues' Running counts three ways, and
// the Transition Logs of the jobs the audits judge by them: every
// Dependency parent and dependent, every job charged more than one Attempt
// or not Succeeded, every job an outcome report was refused for, and a
// random sample of the rest (all of them up to 20,000 jobs).
func (c *coordinator) finalState(ctx context.Context) (map[int64]audit.Job, []audit.Queue, error) {
	jobs := map[int64]audit.Job{}
	rows := map[string]int{}
	var before backwave.Cursor
	for {
		pg, err := c.admin.Jobs(ctx, backwave.JobListParams{PageParams: backwave.PageParams{Before: before, Limit: 10_000}})
		if err != nil {
			return nil, nil, fmt.Errorf("final state: %w", err)
		}
		for _, ji := range pg.Items {
			var a workArgs
			_ = json.Unmarshal(ji.Payload, &a)
			jobs[int64(ji.ID)] = audit.Job{
				ID: int64(ji.ID), Queue: ji.Queue, State: ji.State.String(), Terminal: terminal(ji.State),
				Attempt: int64(ji.Attempt), Worker: ji.Worker, Lease: ji.LeaseExpiresAt, Batch: a.B,
			}
			if ji.State == backwave.StateRunning {
				rows[ji.Queue]++
			}
		}
		if pg.Next == 0 || len(pg.Items) == 0 {
			break
		}
		before = pg.Next
	}
	var qs []audit.Queue
	infos, err := c.admin.Queues(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("final state: %w", err)
	}
	for _, qi := range infos {
		m, err := c.admin.CountByState(ctx, qi.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("final state: %w", err)
		}
		qs = append(qs, audit.Queue{Name: qi.Name, Info: qi.Running, Counted: m[backwave.StateRunning], Rows: rows[qi.Name]})
	}
	want := c.logSubset(jobs)
	c.logf("final state: %d jobs; reading %d Transition Logs", len(jobs), len(want))
	for _, id := range want {
		d, err := c.admin.Job(ctx, backwave.JobID(id))
		if err != nil {
			if errors.Is(err, backwave.ErrNotFound) {
				continue
			}
			return nil, nil, fmt.Errorf("final state: %w", err)
		}
		j := jobs[id]
		j.HasLog = true
		for _, t := range d.Transitions {
			j.Log = append(j.Log, audit.Transition{At: t.At, From: t.From.String(), State: t.State.String(), Via: t.Via.String(), Attempt: int64(t.Attempt)})
		}
		jobs[id] = j
	}
	return jobs, qs, nil
}

func terminal(s backwave.JobState) bool {
	switch s {
	case backwave.StateSucceeded, backwave.StateDeadLettered, backwave.StateCancelled, backwave.StateQuarantined:
		return true
	}
	return false
}

// logSubset picks the jobs whose Transition Logs are read.
func (c *coordinator) logSubset(jobs map[int64]audit.Job) []int64 {
	entries, _, _ := journal.ReadDir(c.jdir)
	pick := map[int64]bool{}
	for _, e := range entries {
		switch {
		case e.Kind == journal.KindDependency:
			pick[e.ID] = true
			for _, p := range e.Parents {
				pick[p] = true
			}
		case e.Kind == journal.KindReport && !e.Applied, e.Kind == journal.KindRenewLost:
			pick[e.ID] = true
		}
	}
	var rest []int64
	for id, j := range jobs {
		if j.Attempt > 1 || j.State != "succeeded" {
			pick[id] = true
		} else if !pick[id] {
			rest = append(rest, id)
		}
	}
	sort.Slice(rest, func(i, k int) bool { return rest[i] < rest[k] })
	r := rand.New(rand.NewPCG(c.o.seed, 0x10c))
	r.Shuffle(len(rest), func(i, k int) { rest[i], rest[k] = rest[k], rest[i] })
	room := max(20_000-len(pick), 2_000)
	for _, id := range rest[:min(room, len(rest))] {
		pick[id] = true
	}
	out := make([]int64, 0, len(pick))
	for id := range pick {
		if _, ok := jobs[id]; ok {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i] < out[k] })
	return out
}

// childTarget is the target the child processes run as: postgres-ha's
// children are PostgreSQL's, through the multi-host URL.
func childTarget(target string) string {
	if target == targetPostgresHA {
		return targetPostgres
	}
	return target
}

// checkURL refuses a --pg-url the faults must not touch: the shared
// instance on the default port.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--pg-url: %w", err)
	}
	if p := u.Port(); p == "" || p == "5432" {
		return fmt.Errorf("--pg-url %s: the faults terminate backends and hold connections; point it at a private cluster, not port 5432", u.Redacted())
	}
	return nil
}

// childErrors returns the first error line each child process logged.
func childErrors(dir string) []string {
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(names)
	var out []string
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil || len(b) == 0 {
			continue
		}
		// A child's own failure is the line it ends with, "torture NAME: …";
		// the store's error logs during faults are expected.
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "torture ") {
				out = append(out, "child "+strings.TrimPrefix(line, "torture "))
			}
		}
	}
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… and %d more child logs with errors", len(out)-20))
	}
	return out
}
