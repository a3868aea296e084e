package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// The multi-process acceptance tests re-execute this test binary as worker
// processes that share one database file: the glossary's Embedded Adapter,
// "any number of processes on that host may share the database — each a
// Node coordinating through the shared file, so concurrent Claim,
// cluster-wide Concurrency Limits, and lease expiry all stay live across
// those processes". The child's role and settings arrive in environment
// variables; TestMain runs the child instead of the tests when they are set.

// Environment variables of a worker child.
const (
	envChild   = "BACKWAVE_SQLITE_TEST_CHILD" // the child's name; set only in children
	envDB      = "BACKWAVE_SQLITE_TEST_DB"
	envQueue   = "BACKWAVE_SQLITE_TEST_QUEUE"
	envPool    = "BACKWAVE_SQLITE_TEST_POOL"
	envLease   = "BACKWAVE_SQLITE_TEST_LEASE"
	envWork    = "BACKWAVE_SQLITE_TEST_WORK" // how long a handler works
	envRecords = "BACKWAVE_SQLITE_TEST_RECORDS"
	envRole    = "BACKWAVE_SQLITE_TEST_ROLE" // "" a worker node, "loop" a bare claim-report loop, "migrate" one Migrate
)

// workArgs is the job type of the children.
type workArgs struct {
	N int `json:"n"`
}

func (workArgs) WireName() string { return "sqlite_test.work" }

func TestMain(m *testing.M) {
	if name := os.Getenv(envChild); name != "" {
		if err := runChild(name); err != nil {
			fmt.Fprintf(os.Stderr, "child %s: %v\n", name, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild is one worker process: it works the Queue until no job in the
// file is live, then stops gracefully. Each handler run is appended to the
// records file as "id attempt" once the handler returns.
func runChild(name string) error {
	ctx := context.Background()
	switch os.Getenv(envRole) {
	case "loop":
		return claimLoop(ctx, name)
	case "migrate":
		res, err := sqlite.Migrate(ctx, os.Getenv(envDB), sqlite.Options{})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(os.Stdout, "from=%d to=%d applied=%d\n", res.From, res.To, len(res.Applied))
		return err
	}
	pool, err := strconv.Atoi(os.Getenv(envPool))
	if err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	lease, err := time.ParseDuration(os.Getenv(envLease))
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	work, err := time.ParseDuration(os.Getenv(envWork))
	if err != nil {
		return fmt.Errorf("work: %w", err)
	}
	queue := os.Getenv(envQueue)
	st, err := sqlite.Open(ctx, os.Getenv(envDB), sqlite.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	records, err := os.OpenFile(os.Getenv(envRecords), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = records.Close() }()
	var mu sync.Mutex

	workers := backwave.NewHandlers()
	err = backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[workArgs]) error {
		if work > 0 {
			select {
			case <-time.After(work):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		_, err := fmt.Fprintf(records, "%d %d\n", j.ID, j.Attempt)
		return err
	}, backwave.WithRetryPolicy(backwave.RetryPolicy{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond, Multiplier: 1}))
	if err != nil {
		return err
	}
	group := backwave.DefaultWorkerGroup("g", backwave.Strict(queue, backwave.DefaultQueue))
	group.PoolSize = pool
	group.MaxClaimBatch = pool
	group.MaxOutcomeBatch = pool
	group.LeaseDuration = lease
	group.HeartbeatInterval = lease / 4
	group.PollInterval = 50 * time.Millisecond
	group.MaintenanceInterval = 100 * time.Millisecond
	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: workers,
		Groups:   []backwave.WorkerGroupOptions{group},
		NodeID:   name,
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(2 * time.Minute)
	for range tick.C {
		counts, err := st.JobCountByState(ctx, store.CountParams{})
		if err != nil {
			return err
		}
		if counts[job.StateScheduled]+counts[job.StateRunning] == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jobs still live after 2 minutes: %v", counts)
		}
	}
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return client.Stop(stopCtx)
}

// child is one started worker process.
type child struct {
	name    string
	cmd     *exec.Cmd
	stderr  *bytes.Buffer
	stdout  bytes.Buffer
	records string
	done    chan error
}

// fleet starts n worker children on the file at path.
func fleet(t testing.TB, path, queue string, n, pool int, lease, work time.Duration, env ...string) []*child {
	t.Helper()
	dir := t.TempDir()
	var out []*child
	for i := range n {
		c := &child{name: fmt.Sprintf("child%d", i), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
		c.records = filepath.Join(dir, c.name+".records")
		c.cmd = exec.Command(os.Args[0], "-test.run=^$")
		c.cmd.Env = append(os.Environ(),
			envChild+"="+c.name, envDB+"="+path, envQueue+"="+queue, envPool+"="+strconv.Itoa(pool),
			envLease+"="+lease.String(), envWork+"="+work.String(), envRecords+"="+c.records)
		c.cmd.Env = append(c.cmd.Env, env...)
		c.cmd.Stderr = c.stderr
		c.cmd.Stdout = &c.stdout
		if err := c.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", c.name, err)
		}
		go func() { c.done <- c.cmd.Wait() }()
		t.Cleanup(func() {
			if c.cmd.ProcessState == nil {
				_ = c.cmd.Process.Kill()
			}
		})
		out = append(out, c)
	}
	return out
}

// wait waits for the child to exit and requires a clean exit.
func (c *child) wait(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, c.stderr)
		}
	case <-time.After(timeout):
		_ = c.cmd.Process.Kill()
		t.Fatalf("%s did not finish within %v\n%s", c.name, timeout, c.stderr)
	}
}

// runs reads a child's records: how often each (job, Attempt) ran to the
// end of its handler.
func (c *child) runs(t *testing.T) map[job.Lease]int {
	t.Helper()
	f, err := os.Open(c.records)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	out := make(map[job.Lease]int)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l job.Lease
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &l.ID, &l.Attempt); err != nil {
			t.Fatalf("%s: record %q: %v", c.name, sc.Text(), err)
		}
		out[l]++
	}
	return out
}

// seed opens the file, inserts n jobs in queue, and returns the store.
func seed(t *testing.T, path, queue string, n, maxAttempts int) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	jobs := make([]store.NewJob, n)
	for i := range jobs {
		jobs[i] = store.NewJob{WireName: workArgs{}.WireName(), Queue: queue, Payload: fmt.Appendf(nil, `{"n":%d}`, i), MaxAttempts: maxAttempts}
	}
	if _, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	return st
}

// allJobs lists every job of the file.
func allJobs(t *testing.T, st *sqlite.Store) []job.Job {
	t.Helper()
	var out []job.Job
	p := store.JobListParams{Limit: 10_000}
	for {
		page, err := st.JobList(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < p.PageLimit() {
			return out
		}
		p.BeforeID = page[len(page)-1].ID
	}
}

// checkOneOutcomePerAttempt requires the Transition Log of the job to show
// each charged Attempt claimed once and its Lease ended exactly once (by an
// outcome or an expiry): Effect-Once, "the recorded outcome of an Attempt …
// apply once".
func checkOneOutcomePerAttempt(t *testing.T, st *sqlite.Store, j job.Job) {
	t.Helper()
	log, err := st.JobTransitions(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	claimed := map[job.Attempt]int{}
	ended := map[job.Attempt]int{}
	for _, tr := range log {
		switch {
		case tr.Via == core.ViaClaim:
			claimed[tr.Attempt]++
		case tr.From == job.StateRunning:
			ended[tr.Attempt]++
		}
	}
	for a := job.Attempt(1); a <= j.Attempt; a++ {
		if claimed[a] != 1 || ended[a] != 1 {
			t.Fatalf("job %d Attempt %d: claimed %d times, ended %d times; log %+v", j.ID, a, claimed[a], ended[a], log)
		}
	}
}

// TestMultiProcessExactlyOnce: 3 processes share one file and work 3,000
// jobs; with nothing failing, every job is Succeeded at Attempt 1 and its
// handler ran exactly once across the fleet.
func TestMultiProcessExactlyOnce(t *testing.T) {
	t.Parallel()
	const jobs = 3000
	path := filepath.Join(t.TempDir(), "jobs.db")
	st := seed(t, path, "work", jobs, 3)
	start := time.Now()
	kids := fleet(t, path, "work", 3, 50, 30*time.Second, 0)
	for _, c := range kids {
		c.wait(t, 90*time.Second)
	}
	elapsed := time.Since(start)
	runs := map[job.Lease]int{}
	for _, c := range kids {
		r := c.runs(t)
		t.Logf("%s ran %d jobs", c.name, len(r))
		for l, n := range r {
			runs[l] += n
		}
	}
	t.Logf("%d jobs in %v across 3 processes (%.0f jobs/s, including process start)", jobs, elapsed.Round(time.Millisecond), jobs/elapsed.Seconds())
	all := allJobs(t, st)
	if len(all) != jobs {
		t.Fatalf("%d jobs in the file, want %d", len(all), jobs)
	}
	for _, j := range all {
		if j.State != job.StateSucceeded || j.Attempt != 1 {
			t.Fatalf("job %d is %s at Attempt %d, want succeeded at Attempt 1", j.ID, j.State, j.Attempt)
		}
		if n := runs[j.Lease()]; n != 1 {
			t.Fatalf("job %d Attempt 1 ran %d times, want exactly once", j.ID, n)
		}
	}
	if len(runs) != jobs {
		t.Fatalf("handlers ran %d distinct Attempts, want %d", len(runs), jobs)
	}
}

// TestMultiProcessCrash: kill -9 one of three processes mid-run. Its leased
// jobs are re-run by the others after the Lease lapses (glossary, Lease:
// "Expiry makes the job claimable again"), every job ends terminal, and the
// store applied exactly one outcome per Attempt.
func TestMultiProcessCrash(t *testing.T) {
	t.Parallel()
	const jobs = 200
	lease := 1500 * time.Millisecond
	path := filepath.Join(t.TempDir(), "jobs.db")
	st := seed(t, path, "work", jobs, 5)
	// Handlers long enough that the victim still holds Leases at the kill:
	// with 50 ms a loaded machine let it report every job it was seen
	// holding between the read below and the signal.
	kids := fleet(t, path, "work", 3, 10, lease, 400*time.Millisecond)
	victim := kids[0]

	// Wait until the victim holds Leases, then kill it without warning.
	var held []job.Job
	deadline := time.Now().Add(60 * time.Second)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for len(held) < 3 {
		select {
		case err := <-victim.done:
			t.Fatalf("the victim exited before it was killed: %v\n%s", err, victim.stderr)
		case <-poll.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the victim never held 3 Leases\n%s", victim.stderr)
		}
		running, err := st.JobList(context.Background(), store.JobListParams{JobFilter: store.JobFilter{States: []job.State{job.StateRunning}}, Limit: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		held = held[:0]
		for _, j := range running {
			if strings.HasPrefix(string(j.Worker), victim.name+"/") {
				held = append(held, j)
			}
		}
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	killedAt := time.Now()
	for _, c := range kids[1:] {
		c.wait(t, 90*time.Second)
	}

	all := allJobs(t, st)
	if len(all) != jobs {
		t.Fatalf("%d jobs in the file, want %d", len(all), jobs)
	}
	for _, j := range all {
		if !j.State.Terminal() {
			t.Fatalf("job %d ended %s, want a terminal state", j.ID, j.State)
		}
		checkOneOutcomePerAttempt(t, st, j)
	}
	rerun := 0
	for _, h := range held {
		j, err := st.JobGet(context.Background(), h.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Attempt == h.Attempt {
			continue // the victim reported it before it died
		}
		rerun++
		if j.RetryCause != job.RetryCauseLeaseExpired || strings.HasPrefix(string(j.Worker), victim.name) {
			t.Fatalf("job %d, held by the victim at Attempt %d, ended %+v", h.ID, h.Attempt, j)
		}
		log, err := st.JobTransitions(context.Background(), h.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range log {
			if tr.Via == core.ViaExpire && tr.Attempt == h.Attempt && tr.At.Before(h.LeaseExpiresAt) {
				t.Fatalf("job %d: Lease expiring %v was expired at %v", h.ID, h.LeaseExpiresAt, tr.At)
			}
		}
	}
	if rerun == 0 {
		t.Fatalf("none of the %d jobs the victim held was re-run", len(held))
	}
	t.Logf("victim held %d jobs when killed, %d re-run by the others; survivors finished %v after the kill",
		len(held), rerun, time.Since(killedAt).Round(time.Millisecond))
}

// TestMultiProcessConcurrencyLimit: limit 2 on a Queue, 3 processes with
// PoolSize 10 each; an external observer never sees more than 2 Running in
// that Queue (glossary, Concurrency Limit: "a per-Queue, cluster-wide cap").
func TestMultiProcessConcurrencyLimit(t *testing.T) {
	t.Parallel()
	const jobs, limit = 60, 2
	path := filepath.Join(t.TempDir(), "jobs.db")
	st := seed(t, path, "limited", jobs, 3)
	if err := st.QueueSetLimit(context.Background(), store.QueueSetLimitParams{Queue: "limited", Limit: limit}); err != nil {
		t.Fatal(err)
	}
	observer, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = observer.Close() }()
	observer.SetMaxOpenConns(1)

	kids := fleet(t, path, "limited", 3, 10, 30*time.Second, 20*time.Millisecond)
	exited := make(chan struct{})
	errs := make([]error, len(kids))
	go func() {
		defer close(exited)
		for i, c := range kids {
			errs[i] = <-c.done
		}
	}()
	maxSeen, samples := 0, 0
	deadline := time.Now().Add(90 * time.Second)
	for done := false; !done; {
		select {
		case <-exited:
			done = true
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the children did not finish within 90s")
		}
		var running int
		err := observer.QueryRow(`SELECT COUNT(*) FROM backwave_job WHERE queue = 'limited' AND state = 3`).Scan(&running)
		if err != nil {
			t.Fatal(err)
		}
		samples++
		maxSeen = max(maxSeen, running)
		if running > limit {
			t.Fatalf("observer saw %d Running in a Queue limited to %d", running, limit)
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v\n%s", kids[i].name, err, kids[i].stderr)
		}
	}
	for _, j := range allJobs(t, st) {
		if j.State != job.StateSucceeded {
			t.Fatalf("job %d ended %s", j.ID, j.State)
		}
	}
	if maxSeen == 0 {
		t.Fatalf("the observer never saw a Running job in %d samples", samples)
	}
	t.Logf("observer: %d samples, at most %d Running", samples, maxSeen)
}

// TestMultiProcessMigrate: processes migrating one fresh file at once are
// ordered by its write lock; exactly one applies the migrations and the
// others find nothing to do (glossary, Coordinated Migration).
func TestMultiProcessMigrate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "jobs.db")
	kids := fleet(t, path, "work", 4, 1, time.Second, 0, envRole+"=migrate")
	applied := 0
	for _, c := range kids {
		c.wait(t, 60*time.Second)
		var from, to, n int
		if _, err := fmt.Sscanf(c.stdout.String(), "from=%d to=%d applied=%d", &from, &to, &n); err != nil {
			t.Fatalf("%s printed %q: %v", c.name, c.stdout.String(), err)
		}
		if to != sqlite.LatestSchemaVersion() {
			t.Fatalf("%s ended at version %d", c.name, to)
		}
		if n > 0 {
			applied++
		}
	}
	if applied != 1 {
		t.Fatalf("%d processes applied migrations, want exactly 1", applied)
	}
}
