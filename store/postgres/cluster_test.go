package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// The cluster tests run real Clients — in this process, each on its own
// pool, and in a separate OS process (this test binary re-executed as
// TestClusterNodeProcess) — against one schema, as nodes on different hosts
// would: they coordinate only through the database.

const clusterQueue = "cluster"

type noopArgs struct{ N int }

func (noopArgs) WireName() string { return "pgtest.noop" }
func (noopArgs) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: clusterQueue, MaxAttempts: 5}
}

// Environment of a node process.
const (
	childEnv       = "BACKWAVE_PG_TEST_NODE"        // "work" or "hang"
	childSchemaEnv = "BACKWAVE_PG_TEST_NODE_SCHEMA" // the schema to join
	childIDEnv     = "BACKWAVE_PG_TEST_NODE_ID"     // the node's NodeID
)

// nodeGroup is the Worker Group every node of the cluster tests runs.
func nodeGroup(lease time.Duration) backwave.WorkerGroupOptions {
	g := backwave.DefaultWorkerGroup("g", backwave.Strict(clusterQueue))
	g.PoolSize = 50
	g.MaxClaimBatch = 50
	g.PollInterval = 200 * time.Millisecond
	g.LeaseDuration = lease
	g.HeartbeatInterval = lease / 3
	g.MaintenanceInterval = 200 * time.Millisecond
	return g
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// startNode starts a Client on s whose handler calls ran for every
// Attempt it runs.
func startNode(t *testing.T, s store.Store, nodeID string, lease time.Duration, ran func(id job.ID, attempt job.Attempt)) *backwave.Client {
	t.Helper()
	w := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(w, func(ctx context.Context, j *backwave.Job[noopArgs]) error {
		ran(j.ID, j.Attempt)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c, err := backwave.NewClient(s, backwave.Config{
		Handlers: w, NodeID: nodeID, Logger: quietLogger(),
		Groups: []backwave.WorkerGroupOptions{nodeGroup(lease)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

// TestClusterNodeProcess is the body of a node process; run directly it
// does nothing. It joins the schema in $BACKWAVE_PG_TEST_NODE_SCHEMA,
// prints "bwnode ready", then one "bwnode ran ID ATTEMPT" line per Attempt
// its handler starts, and stops when its standard input closes. As a "hang"
// node its handler never returns.
func TestClusterNodeProcess(t *testing.T) {
	kind := os.Getenv(childEnv)
	if kind == "" {
		return
	}
	s, err := postgres.Open(context.Background(), testURL(t), postgres.Options{Schema: os.Getenv(childSchemaEnv), SkipMigrate: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "node process: %v\n", err)
		os.Exit(2)
	}
	// A hanging node's Leases must lapse soon after it dies; a working
	// node's must never lapse while it lives, however slow the machine.
	lease := time.Minute
	if kind == "hang" {
		lease = 2 * time.Second
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, "bwnode "+format+"\n", args...)
	}
	w := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(w, func(ctx context.Context, j *backwave.Job[noopArgs]) error {
		say("ran %d %d", j.ID, j.Attempt)
		if kind == "hang" {
			select {} // mid-run until the process is killed
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c, err := backwave.NewClient(s, backwave.Config{
		Handlers: w, NodeID: os.Getenv(childIDEnv), Logger: quietLogger(),
		Groups: []backwave.WorkerGroupOptions{nodeGroup(lease)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	say("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = c.Stop(context.Background())
	_ = s.Close()
	os.Exit(0)
}

// nodeProcess is a running node process.
type nodeProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ready chan struct{}
	ran   chan [2]int64 // id, attempt
	done  chan struct{} // closed when its output ends
}

func startNodeProcess(t *testing.T, kind, schema, nodeID string) *nodeProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterNodeProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+kind, childSchemaEnv+"="+schema, childIDEnv+"="+nodeID)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &nodeProcess{cmd: cmd, stdin: stdin, ready: make(chan struct{}), ran: make(chan [2]int64, 1<<16), done: make(chan struct{})}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "bwnode" && f[1] == "ready":
				close(p.ready)
			case len(f) == 4 && f[0] == "bwnode" && f[1] == "ran":
				id, _ := strconv.ParseInt(f[2], 10, 64)
				attempt, _ := strconv.ParseInt(f[3], 10, 64)
				p.ran <- [2]int64{id, attempt}
			}
		}
	}()
	select {
	case <-p.ready:
	case <-p.done:
		t.Fatal("node process exited before it was ready")
	case <-time.After(time.Minute):
		t.Fatal("node process not ready within a minute")
	}
	return p
}

// stop closes the process's input, waits for it to stop gracefully and
// returns what its handler ran.
func (p *nodeProcess) stop(t *testing.T) [][2]int64 {
	t.Helper()
	p.stdin.Close()
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("node process: %v", err)
	}
	close(p.ran)
	var out [][2]int64
	for r := range p.ran {
		out = append(out, r)
	}
	return out
}

// waitUntil polls cond until it holds, failing the test after limit.
func waitUntil(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
	}
}

func countState(t testing.TB, s store.Store, st job.State) int {
	t.Helper()
	n, err := s.JobCountByState(context.Background(), store.CountParams{})
	if err != nil {
		t.Fatal(err)
	}
	return n[st]
}

func enqueueNoop(t testing.TB, s store.Store, n int) []job.ID {
	t.Helper()
	c, err := backwave.NewClient(s, backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []job.ID
	for start := 0; start < n; start += 2000 {
		var batch []backwave.EnqueueParams
		for i := start; i < min(n, start+2000); i++ {
			batch = append(batch, backwave.EnqueueParams{Args: noopArgs{i}})
		}
		got, err := c.EnqueueMany(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	return ids
}

// Issue 4, Acceptance: "4 Clients on separate pools plus one separate OS
// process, 20,000 jobs, each succeeds exactly once when nothing fails."
func TestClusterMultiNode(t *testing.T) {
	t.Parallel()
	jobs := 20_000
	if testing.Short() {
		jobs = 2_000
	}
	admin := openStore(t, modePgx, postgres.Options{})
	schema := admin.Schema()

	var (
		mu   sync.Mutex
		runs = make(map[job.ID]int, jobs)
		per  = make(map[string]int)
	)
	ran := func(node string) func(job.ID, job.Attempt) {
		return func(id job.ID, _ job.Attempt) {
			mu.Lock()
			defer mu.Unlock()
			runs[id]++
			per[node]++
		}
	}
	proc := startNodeProcess(t, "work", schema, "process")
	var clients []*backwave.Client
	for i := range 4 {
		m := modes[i%2] // two nodes through pgx, two through database/sql
		s := openStore(t, m, postgres.Options{Schema: schema, SkipMigrate: true})
		name := fmt.Sprintf("node%d-%s", i, m)
		clients = append(clients, startNode(t, s, name, time.Minute, ran(name)))
	}

	ids := enqueueNoop(t, admin, jobs)
	waitUntil(t, fmt.Sprintf("%d jobs to succeed", jobs), 5*time.Minute, func() bool {
		return countState(t, admin, job.StateSucceeded) == jobs
	})
	for _, c := range clients {
		if err := c.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range proc.stop(t) {
		if r[1] != 1 {
			t.Errorf("the node process ran job %d at Attempt %d", r[0], r[1])
		}
		runs[job.ID(r[0])]++
		per["process"]++
	}
	t.Logf("runs per node: %v", per)
	if per["process"] == 0 {
		t.Error("the node process ran no job")
	}
	for _, id := range ids {
		if runs[id] != 1 {
			t.Errorf("job %d ran %d times, want exactly once", id, runs[id])
		}
	}
	if len(runs) != len(ids) {
		t.Errorf("%d distinct jobs ran, want %d", len(runs), len(ids))
	}
	counts, err := admin.JobCountByState(context.Background(), store.CountParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 1 || counts[job.StateSucceeded] != jobs {
		t.Fatalf("jobs by state %v, want all %d succeeded", counts, jobs)
	}
	// One Attempt charged per job: no job was claimed twice.
	if n := queryInt(t, "SELECT count(*) FROM "+schema+".job WHERE attempt <> 1"); n != 0 {
		t.Fatalf("%d jobs were charged more than one Attempt", n)
	}
}

// queryInt runs a query returning one integer on a connection of its own.
func queryInt(t *testing.T, query string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Issue 4, Acceptance: "a node's process is killed mid-run; its jobs are
// reclaimed after the lease and every job ends terminal with one applied
// outcome per Attempt; the killed node's late outcome (simulate it by
// reporting with the old worker id and Attempt) is rejected by the fence."
func TestClusterCrash(t *testing.T) {
	t.Parallel()
	const jobs = 1_000
	admin := openStore(t, modePgx, postgres.Options{})
	schema := admin.Schema()
	ctx := context.Background()

	// The doomed node starts alone and takes jobs whose handlers never
	// return: it is mid-run on every one of them when it dies.
	proc := startNodeProcess(t, "hang", schema, "doomed")
	ids := enqueueNoop(t, admin, jobs)
	held := make(map[job.ID]bool)
	for len(held) < 20 {
		select {
		case r := <-proc.ran:
			held[job.ID(r[0])] = true
		case <-time.After(time.Minute):
			t.Fatalf("the doomed node started %d handlers within a minute, want 20", len(held))
		}
	}
	if err := proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = proc.cmd.Wait()
	// Its Leases are the store's record of what it held: every job it
	// started, and any it claimed but had not started yet.
	running, err := admin.JobList(ctx, store.JobListParams{JobFilter: store.JobFilter{States: []job.State{job.StateRunning}}, Limit: jobs})
	if err != nil {
		t.Fatal(err)
	}
	var victim job.Job
	for _, j := range running {
		if j.Attempt != 1 || !strings.HasPrefix(string(j.Worker), "doomed/") {
			t.Fatalf("running job %d: Attempt %d by %q, want Attempt 1 by the doomed node", j.ID, j.Attempt, j.Worker)
		}
		victim = j
	}
	for id := range held {
		if !slices.ContainsFunc(running, func(j job.Job) bool { return j.ID == id }) {
			t.Fatalf("job %d, started by the doomed node, is not Running under its Lease", id)
		}
	}
	for _, j := range running {
		held[j.ID] = true
	}
	t.Logf("the doomed node died holding %d Leases", len(held))

	// Two healthy nodes run everything else and, once the dead node's
	// Leases lapse, its jobs too.
	var (
		mu   sync.Mutex
		runs = make(map[job.Lease]int)
	)
	ran := func(id job.ID, a job.Attempt) {
		mu.Lock()
		defer mu.Unlock()
		runs[job.Lease{ID: id, Attempt: a}]++
	}
	for i, m := range modes {
		s := openStore(t, m, postgres.Options{Schema: schema, SkipMigrate: true})
		startNode(t, s, fmt.Sprintf("healthy%d", i), time.Minute, ran)
	}
	waitUntil(t, "every job to succeed", 3*time.Minute, func() bool {
		return countState(t, admin, job.StateSucceeded) == jobs
	})

	// The dead node's jobs ran again at Attempt 2 after their Leases
	// expired; every other job ran once, at Attempt 1.
	for _, id := range ids {
		j, err := admin.JobGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wantAttempt, wantCause := job.Attempt(1), job.RetryCauseNone
		if held[id] {
			wantAttempt, wantCause = 2, job.RetryCauseLeaseExpired
		}
		if j.State != job.StateSucceeded || j.Attempt != wantAttempt || j.RetryCause != wantCause {
			t.Errorf("job %d: %s at Attempt %d, cause %q; want succeeded at %d, cause %q", id, j.State, j.Attempt, j.RetryCause, wantAttempt, wantCause)
		}
	}
	// One applied outcome per Attempt (the expiry is the outcome of the
	// dead node's Attempt): every charged Attempt left Running exactly once.
	if n := queryInt(t, `SELECT count(*) FROM (
    SELECT j.id, a.attempt, (SELECT count(*) FROM `+schema+`.job_transition t
                             WHERE t.job_id = j.id AND t.attempt = a.attempt AND t.from_state = 'running') AS ends
    FROM `+schema+`.job j CROSS JOIN LATERAL generate_series(1, j.attempt) AS a(attempt)) x
WHERE x.ends <> 1`); n != 0 {
		t.Fatalf("%d Attempts ended other than exactly once", n)
	}
	mu.Lock()
	for l, n := range runs {
		if n != 1 {
			t.Errorf("Attempt %s ran %d times on the healthy nodes", l, n)
		}
	}
	mu.Unlock()

	// The dead node's late outcome, under its worker id and Attempt 1, is
	// fenced out and changes nothing.
	before, err := admin.JobGet(ctx, victim.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := admin.OutcomeReport(ctx, store.ReportParams{Worker: victim.Worker, Outcomes: []store.Outcome{{
		Outcome: core.Outcome{Lease: victim.Lease(), State: job.StateSucceeded, Via: core.ViaSucceed},
		Output:  []byte("late"),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Applied {
		t.Fatalf("the dead node's late outcome for %s was applied", victim.Lease())
	}
	after, err := admin.JobGet(ctx, victim.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("a fenced-out outcome changed job %d:\n%+v\n%+v", victim.ID, before, after)
	}
	if out, err := admin.JobOutput(ctx, victim.ID); err != nil || string(out) == "late" {
		t.Fatalf("Job Output after the fenced-out outcome = %q, %v", out, err)
	}
}

// Glossary, Wake-Up Hint: "the system must behave identically (minus
// latency) if every hint is dropped". With the listener off on every node,
// polling alone drains jobs enqueued while the nodes run.
func TestClusterPollingOnly(t *testing.T) {
	t.Parallel()
	const jobs = 500
	admin := openStore(t, modePgx, postgres.Options{DisableNotify: true})
	for i, m := range modes {
		s := openStore(t, m, postgres.Options{Schema: admin.Schema(), SkipMigrate: true, DisableListener: true})
		startNode(t, s, fmt.Sprintf("poller%d", i), time.Minute, func(job.ID, job.Attempt) {})
	}
	enqueueNoop(t, admin, jobs)
	waitUntil(t, "polling to drain every job", 2*time.Minute, func() bool {
		return countState(t, admin, job.StateSucceeded) == jobs
	})
}
