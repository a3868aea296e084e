package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// rssChildArg is the first argument that makes this binary the child of the
// rss scenario: a process whose only job is one Client draining a backlog,
// so its peak RSS is the node's and nothing else's.
const rssChildArg = "rss-child"

// childReport is what the child prints on stdout.
type childReport struct {
	Jobs    int   `json:"jobs"`
	Elapsed int64 `json:"elapsed_ns"`
	// PeakKiB is the child's VmHWM: the peak resident set of its own
	// address space. (The rusage a parent gets from wait4 will not do: on
	// Linux its maxrss keeps the high-water mark of the address space the
	// child had before exec, a copy of the parent's.)
	PeakKiB int64 `json:"peak_kib"`
}

// measureRSS drains each backlog size once in a child process and reports
// the child's peak RSS with its drain rate.
func (b *bench) measureRSS(ctx context.Context, tg string) ([]result, error) {
	if !b.hasSystem(sysBackWave) {
		return nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("rss: %w", err)
	}
	var out []result
	for _, n := range b.cfg.sizes.RSS {
		r, err := b.rssOnce(ctx, exe, tg, n)
		if err != nil {
			return nil, fmt.Errorf("rss backlog %d: %w", n, err)
		}
		b.log.Info("run", "scenario", scRSS, "target", tg, "backlog", n, "jobs_per_sec", int(r.JobsPerSec), "settings", r.Settings)
		out = append(out, r)
	}
	return out, nil
}

func (b *bench) hasSystem(name string) bool {
	for _, s := range b.systems {
		if s.name() == name {
			return true
		}
	}
	return false
}

func (b *bench) rssOnce(ctx context.Context, exe, tg string, n int) (result, error) {
	sys := backwaveSystem{}
	inst, settings, err := sys.open(ctx, b, scDrain, tg)
	if err != nil {
		return result{}, err
	}
	in := inst.(*backwaveInstance)
	defer func() { _ = in.close(context.WithoutCancel(ctx)) }()
	if err := in.bulkInsert(ctx, n); err != nil {
		return result{}, fmt.Errorf("insert the backlog: %w", err)
	}
	args := []string{rssChildArg, "-target", tg, "-n", fmt.Sprint(n), "-knobs", strings.ReplaceAll(settings, " ", ",")}
	switch tg {
	case tgPostgres:
		u, err := b.pgURLWith(tgPostgres, scRSS, in.k.int("conns"), sysBackWave)
		if err != nil {
			return result{}, err
		}
		args = append(args, "-postgres", u, "-schema", in.st.(*postgres.Store).Schema())
	case tgSQLite:
		args = append(args, "-path", in.st.(*sqlite.Store).Path(), "-synchronous", b.cfg.sqliteSync)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("child: %w", err)
	}
	var rep childReport
	if err := json.Unmarshal(stdout, &rep); err != nil {
		return result{}, fmt.Errorf("child said %q: %w", stdout, err)
	}
	if rep.PeakKiB <= 0 {
		return result{}, fmt.Errorf("the child could not read its peak RSS")
	}
	peakMiB := float64(rep.PeakKiB) / 1024
	rate := round1(float64(rep.Jobs) / time.Duration(rep.Elapsed).Seconds())
	return result{
		Scenario: scRSS, Target: tg, System: sysBackWave, JobsPerSec: rate, Min: rate, Max: rate, Runs: 1,
		Settings: fmt.Sprintf("backlog=%d peak_rss=%.1fMiB %s", n, peakMiB, settings),
	}, nil
}

// rssChild is the child's main: open the store, run one Client until the
// backlog is drained, print a childReport.
func rssChild(args []string) error {
	fs := flag.NewFlagSet(rssChildArg, flag.ContinueOnError)
	tg := fs.String("target", "", "postgres or sqlite")
	n := fs.Int("n", 0, "backlog size")
	spec := fs.String("knobs", "", "BackWave settings")
	pgURL := fs.String("postgres", "", "PostgreSQL URL")
	schema := fs.String("schema", "", "PostgreSQL schema")
	path := fs.String("path", "", "SQLite file")
	sync := fs.String("synchronous", "full", "SQLite synchronous")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	k := backwaveKnobs(scDrain, *tg, sizes{})
	if err := k.override(*spec); err != nil {
		return err
	}
	history, err := store.ParseHistoryPolicy(k.str("history"))
	if err != nil {
		return err
	}
	var st store.Store
	switch *tg {
	case tgPostgres:
		st, err = postgres.Open(ctx, *pgURL, postgres.Options{Schema: *schema, SkipMigrate: true, History: history})
	case tgSQLite:
		st, err = sqlite.Open(ctx, *path, sqlite.Options{Synchronous: sqlite.Synchronous(*sync), History: history})
	default:
		err = fmt.Errorf("unknown target %q", *tg)
	}
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	var worked atomic.Int64
	all := make(chan struct{})
	h := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[noop]) error {
		if worked.Add(1) == int64(*n) {
			close(all)
		}
		return nil
	}); err != nil {
		return err
	}
	c, err := backwave.NewClient(st, backwave.Config{
		Handlers: h,
		NodeID:   "bwbench-rss",
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Groups: []backwave.WorkerGroupOptions{{
			Name: "bench", Policy: backwave.Strict(backwave.DefaultQueue),
			PoolSize: k.int("pool"), MaxClaimBatch: k.int("claim"), MaxOutcomeBatch: k.int("outcome"),
			Pumps: k.int("pumps"), PollInterval: k.dur("poll"),
		}},
	})
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := c.Start(ctx); err != nil {
		return err
	}
	select {
	case <-all:
	case <-time.After(timeBound(*n)):
		return fmt.Errorf("%w: %d of %d jobs worked", errTimeout, worked.Load(), *n)
	}
	// Every handler ran; wait for the last outcomes to land.
	for {
		counts, err := st.JobCountByState(ctx, store.CountParams{Queue: backwave.DefaultQueue})
		if err != nil {
			return err
		}
		if counts[job.StateScheduled]+counts[job.StateRunning] == 0 {
			break
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	elapsed := time.Since(t0)
	if err := c.Stop(ctx); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(childReport{Jobs: *n, Elapsed: int64(elapsed), PeakKiB: peakRSS()})
}

// peakRSS reads this process's VmHWM from /proc/self/status, in KiB (0 if
// it cannot).
func peakRSS() int64 {
	for line := range strings.SplitSeq(readFile("/proc/self/status"), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return 0
}
