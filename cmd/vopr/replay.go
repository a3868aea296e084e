package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/backwave/backwave/internal/sim"
)

func readPlan(path string) (sim.Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return sim.Plan{}, fmt.Errorf("read plan: %w", err)
	}
	p, err := sim.DecodePlan(data)
	if err != nil {
		return sim.Plan{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

func writePlan(path string, p sim.Plan) error {
	data, err := p.Encode()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write plan: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write plan: %w", err)
	}
	return nil
}

// replayCmd replays one Plan and prints its Swarm, result and trace hash;
// with -store, it replays the Plan on memstore and on that store and
// compares their outcome histories.
func replayCmd(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("vopr replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "print the run's story: every event, Driver input, command and state change")
	letPanic := fs.Bool("panic", false, "let a panic escape with its stack instead of reporting a crash")
	uri := fs.String("store", "", "also replay on this store, sqlite://FILE (a fresh file) or postgres://… (a fresh schema), and compare the outcome history with memstore's")
	if err := fs.Parse(args); err != nil {
		return 0, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() != 1 {
		return 0, fmt.Errorf("%w: vopr replay [-v] [-panic] [-store sqlite://FILE|postgres://…] PLAN", errUsage)
	}
	p, err := readPlan(fs.Arg(0))
	if err != nil {
		return 0, err
	}
	sc := &p.Scenario
	fmt.Fprintf(stdout, "replay seed=%d level=%s nodes=%d jobs=%d mutation=%q\nfaults: %s\n%s\n",
		sc.Seed, sc.Level, len(sc.Nodes), sc.Work.Jobs, sc.Mutation, p.Faults.Summary(), sc.Swarm)
	var opts sim.Options
	if *verbose {
		opts.Log = func(line string) { fmt.Fprintln(stdout, line) }
	}
	if *uri != "" && *uri != "mem://" {
		return compareCmd(p, *uri, opts.Log, stdout)
	}
	var rep sim.Report
	if *letPanic {
		rep, err = sim.RunUnrecovered(p, opts)
	} else {
		rep, err = sim.RunWith(p, opts)
	}
	fmt.Fprintf(stdout, "trace=%016x events=%d virtual=%v drained=%v states=%v\n", rep.TraceHash, rep.Events, rep.Virtual, rep.Drained, rep.States)
	var f *sim.Failure
	if errors.As(err, &f) {
		fmt.Fprintf(stdout, "FAIL %s %s\n", f.Class, f.Invariant)
		fmt.Fprintln(stdout, f.Detail)
		return classCode(f.Class), nil
	}
	if err != nil {
		return 0, err
	}
	fmt.Fprintln(stdout, "ok")
	return exitOK, nil
}

// minimizeCmd runs the Seed Minimizer on a failing Plan and writes the
// result beside it, keeping the original.
func minimizeCmd(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("vopr minimize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the minimized Plan here (default: PLAN with .min.json)")
	maxRuns := fs.Int("max-runs", 2000, "cap on replays")
	shrink := fs.Bool("shrink-scenario", false, "also try the coarse Scenario pass (fewer jobs and nodes, a quieter workload), written separately as .shrunk.json")
	if err := fs.Parse(args); err != nil {
		return 0, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() != 1 {
		return 0, fmt.Errorf("%w: vopr minimize [-o FILE] [-max-runs N] [-shrink-scenario] PLAN", errUsage)
	}
	path := fs.Arg(0)
	p, err := readPlan(path)
	if err != nil {
		return 0, err
	}
	progress := func(line string) { fmt.Fprintln(stdout, "  "+line) }
	m, err := sim.Minimize(p, nil, sim.MinimizeOptions{MaxRuns: *maxRuns, Progress: progress})
	if err != nil {
		return 0, err
	}
	dest := *out
	base := strings.TrimSuffix(path, ".json")
	if dest == "" {
		dest = base + ".min.json"
	}
	if err := writePlan(dest, m.Plan); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "minimized %s: %d → %d faults (%s) in %d replays, still %s %s\nwrote %s (the original is kept)\n",
		path, m.Before, m.After, m.Plan.Faults.Summary(), m.Runs, m.Failure.Class, m.Failure.Invariant, dest)
	if *shrink {
		s, err := sim.ShrinkScenario(m.Plan, m.Failure, sim.MinimizeOptions{Progress: progress})
		if err != nil {
			return 0, err
		}
		sdest := strings.TrimSuffix(dest, ".min.json") + ".shrunk.json"
		if err := writePlan(sdest, s.Plan); err != nil {
			return 0, err
		}
		sc := &s.Plan.Scenario
		fmt.Fprintf(stdout, "shrunk scenario: %d nodes, %d jobs, %d faults; wrote %s\n", len(sc.Nodes), sc.Work.Jobs, s.After, sdest)
	}
	return classCode(m.Failure.Class), nil
}

// compareCmd replays p on memstore and on the store uri names, prints both
// results and the first divergence, and exits exitDiverge on one; when they
// agree it exits with the class of memstore's failure, if any.
func compareCmd(p sim.Plan, uri string, log func(string), stdout io.Writer) (int, error) {
	r, err := replayOn(p, uri, log)
	if errors.Is(err, errPlantedBug) {
		fmt.Fprintf(stdout, "cannot compare: %v\n", err)
		return exitUsage, nil
	}
	if err != nil {
		return 0, err
	}
	if r.print(stdout) != nil {
		return exitDiverge, nil
	}
	var f *sim.Failure
	if errors.As(r.mem.err, &f) {
		return classCode(f.Class), nil
	}
	return exitOK, r.mem.err
}
