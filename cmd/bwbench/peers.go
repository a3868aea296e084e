package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Node.js peers on the PostgreSQL target: each runs in a child process
// (peers/peer.mjs) that bwbench drives over a pipe, installed into
// peers/node_modules by peers/install.sh. Without Node.js or the packages,
// their rows are skipped with a message.
const (
	sysGraphile = "graphile-worker"
	sysPgBoss   = "pg-boss"
)

// nodePeer is graphile-worker or pg-boss.
type nodePeer struct{ sys string }

func (p nodePeer) name() string { return p.sys }

// supports: PostgreSQL only, the scenarios River has. graphile-worker has
// no poll-only mode (every worker pool LISTENs for "jobs:insert" and the
// add_job path NOTIFYs), so it has no hints-off row.
func (p nodePeer) supports(sc, tg string) bool {
	if tg != tgPostgres {
		return false
	}
	switch sc {
	case scInsert, scDrain, scSteady, scLatencyOn:
		return true
	case scLatencyOff:
		return p.sys == sysPgBoss
	}
	return false
}

// peerKnobs is each Node.js peer's tuning per scenario, as its own
// documentation advises (docs/benchmarks.md quotes it):
//   - graphile-worker: the settings of its published performance run
//     (concurrentJobs 24, maxPoolSize 25, localQueue size 500,
//     completeJobBatchDelay 0), its bulk path addJobs; for latency the
//     local queue off ("it can increase the latency of job execution") and
//     completion unbatched;
//   - pg-boss: a batch handler fetching batchSize jobs per poll with
//     burstWhenBatchFull ("the worker keeps fetching continuously with no
//     delay" while fetches come back full), its bulk path insert(); for
//     latency the same workers on a queue with notify, the instance with
//     useListenNotify (LISTEN/NOTIFY wakes them), and without either its
//     minimum pollingIntervalSeconds of 0.5.
//     (batchSize 1 for latency was tried: four workers fetching one job a
//     round trip fell behind 100 enqueues a second on this machine.)
func peerKnobs(sys, sc string, sz sizes) *knobs {
	var k *knobs
	switch sys {
	case sysGraphile:
		k = newKnobs("concurrency", "24", "pool", "25", "local_queue", "500", "complete_batch_delay_ms", "0", "poll", "2000ms",
			"insert_batch", "5000", "insert_conc", "2")
		if sc == scLatencyOn {
			k.set("local_queue", "-1")
			k.set("complete_batch_delay_ms", "-1")
		}
	case sysPgBoss:
		k = newKnobs("workers", "4", "batch", "100", "burst", "true", "poll", "500ms", "notify", "false", "notify_poll", "30s", "pool", "10",
			"insert_batch", "5000", "insert_conc", "2")
		switch sc {
		case scLatencyOn:
			k.set("notify", "true")
		case scLatencyOff:
			// pg-boss refuses a poll interval under 0.5 s.
			k.set("poll", max(sz.HintsOffPoll, 500*time.Millisecond).String())
		}
	}
	return k
}

// peerRuntime finds Node.js and the installed peers; the empty string and
// a reason when they are not there.
func (b *bench) peerRuntime(sys string) (node string, reason string) {
	node = b.cfg.node
	if node == "" {
		node = "node"
	}
	path, err := exec.LookPath(node)
	if err != nil {
		return "", fmt.Sprintf("no Node.js (%q not found; -node names it)", node)
	}
	pkg := filepath.Join(b.cfg.peersDir, "node_modules", sys, "package.json")
	if _, err := os.Stat(pkg); err != nil {
		return "", fmt.Sprintf("%s is not installed (no %s: run %s)", sys, pkg, filepath.Join(b.cfg.peersDir, "install.sh"))
	}
	return path, ""
}

// peerVersion reads an installed peer's version, or "not installed".
func peerVersion(dir, pkg string) string {
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return "not installed"
	}
	var v struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Version == "" {
		return "unknown"
	}
	return v.Version
}

func (p nodePeer) open(ctx context.Context, b *bench, sc, tg string) (instance, string, error) {
	k := peerKnobs(p.sys, sc, b.cfg.sizes)
	if err := k.override(b.cfg.overrides[p.sys]); err != nil {
		return nil, "", fmt.Errorf("-%s: %w", p.sys, err)
	}
	node, reason := b.peerRuntime(p.sys)
	if node == "" {
		return nil, "", errors.New(reason)
	}
	prefix := strings.ReplaceAll(p.sys, "-", "")
	schema, drop, err := b.newSchema(ctx, prefix)
	if err != nil {
		return nil, "", err
	}
	settings := map[string]string{}
	for _, name := range k.order {
		settings[name] = k.vals[name]
	}
	spec, err := json.Marshal(map[string]any{
		"system": p.sys, "url": b.cfg.pgURL, "schema": schema, "queue": "bwbench_noop", "settings": settings,
	})
	if err != nil {
		drop()
		return nil, "", err
	}
	script, err := filepath.Abs(filepath.Join(b.cfg.peersDir, "peer.mjs"))
	if err != nil {
		drop()
		return nil, "", err
	}
	// The child outlives no run: close ends it, and a cancelled bench
	// kills it.
	cmd := exec.Command(node, script)
	cmd.Dir = b.cfg.peersDir
	cmd.Env = append(os.Environ(), "BWBENCH_PEER="+string(spec), "PGAPPNAME="+appName(p.sys))
	cmd.Stderr = b.stderr
	in := &peerInstance{b: b, sys: p.sys, sc: sc, k: k, cmd: cmd, drop: drop, replies: make(chan string, 1)}
	in.pendingQ = peerPendingQuery(p.sys, schema)
	if in.stdin, err = cmd.StdinPipe(); err != nil {
		drop()
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		drop()
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		drop()
		return nil, "", fmt.Errorf("start %s: %w", p.sys, err)
	}
	in.done = make(chan struct{})
	go in.read(stdout)
	// The child migrates its schema before it says ready.
	if err := in.await(ctx, 2*time.Minute); err != nil {
		_ = in.close(ctx)
		return nil, "", fmt.Errorf("%s: %w", p.sys, err)
	}
	return in, k.forScenario(sc), nil
}

// peerPendingQuery counts the jobs not yet finalized: graphile-worker
// deletes a job when it completes; pg-boss keeps it in state completed.
func peerPendingQuery(sys, schema string) string {
	if sys == sysGraphile {
		return "SELECT count(*) FROM " + schema + "._private_jobs"
	}
	return "SELECT count(*) FROM " + schema + ".job WHERE state IN ('created', 'retry', 'active')"
}

// peerInstance is one peer process for one run.
type peerInstance struct {
	b        *bench
	sys, sc  string
	k        *knobs
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	drop     func()
	pendingQ string
	replies  chan string
	done     chan struct{}
	mu       sync.Mutex // one command at a time
	workMu   sync.Mutex
	onWork   func(int64)
}

// read dispatches the child's lines: work events to onWork, the rest as
// replies.
func (in *peerInstance) read(r io.Reader) {
	defer close(in.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "w "):
			stamp, err := strconv.ParseInt(line[2:], 10, 64)
			if err == nil {
				in.work(stamp, 1)
			}
		case strings.HasPrefix(line, "n "):
			n, err := strconv.Atoi(line[2:])
			if err == nil {
				in.work(0, n)
			}
		default:
			in.replies <- line
		}
	}
}

func (in *peerInstance) work(stamp int64, n int) {
	in.workMu.Lock()
	f := in.onWork
	in.workMu.Unlock()
	if f == nil {
		return
	}
	for range n {
		f(stamp)
	}
}

// await waits for one reply line: "ok" or "ready" is success.
func (in *peerInstance) await(ctx context.Context, bound time.Duration) error {
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case line := <-in.replies:
		if line == "ok" || line == "ready" {
			return nil
		}
		if msg, ok := strings.CutPrefix(line, "err "); ok {
			return errors.New(msg)
		}
		return fmt.Errorf("unexpected reply %q", line)
	case <-in.done:
		return errors.New("the peer process ended (its error is above)")
	case <-t.C:
		return fmt.Errorf("%w: no reply in %v", errTimeout, bound)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call sends one command and waits for its reply.
func (in *peerInstance) call(ctx context.Context, bound time.Duration, format string, args ...any) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, err := fmt.Fprintf(in.stdin, format+"\n", args...); err != nil {
		return fmt.Errorf("%s: %w", in.sys, err)
	}
	if err := in.await(ctx, bound); err != nil {
		return fmt.Errorf("%s: %w", in.sys, err)
	}
	return nil
}

func (in *peerInstance) bulkInsert(ctx context.Context, n int) error {
	return in.call(ctx, timeBound(n), "insert %d %d %d", n, in.k.int("insert_batch"), in.k.int("insert_conc"))
}

func (in *peerInstance) start(ctx context.Context, onWork func(int64)) error {
	in.workMu.Lock()
	in.onWork = onWork
	in.workMu.Unlock()
	return in.call(ctx, time.Minute, "start")
}

func (in *peerInstance) enqueue(ctx context.Context, stamp int64) error {
	return in.call(ctx, 10*time.Second, "enqueue %d", stamp)
}

func (in *peerInstance) pending(ctx context.Context) (int, error) {
	return in.b.countPG(ctx, in.pendingQ)
}

func (in *peerInstance) close(ctx context.Context) error {
	err := in.call(ctx, time.Minute, "close")
	_ = in.stdin.Close()
	waited := make(chan error, 1)
	go func() { waited <- in.cmd.Wait() }()
	select {
	case werr := <-waited:
		if err == nil && werr != nil {
			err = fmt.Errorf("%s: %w", in.sys, werr)
		}
	case <-time.After(30 * time.Second):
		_ = in.cmd.Process.Kill()
		<-waited
		if err == nil {
			err = fmt.Errorf("%s: killed after it did not end in 30s", in.sys)
		}
	}
	in.drop()
	return err
}
