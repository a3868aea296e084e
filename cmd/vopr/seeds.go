package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/backwave/backwave/internal/sim"
)

// seedsConfig is the parsed command line of a seed run.
type seedsConfig struct {
	seeds    int
	forDur   time.Duration
	levels   []sim.Level
	out      string
	workers  int
	coverage bool
	guided   bool
	base     uint64
	fixed    bool // seeds are base, base+1, …
	size     sim.Size
	verbose  bool
}

func parseSeeds(args []string, stderr io.Writer) (seedsConfig, error) {
	fs := flag.NewFlagSet("vopr", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c seedsConfig
	fs.IntVar(&c.seeds, "seeds", 0, "run this many seeds per level, then stop (0: without end)")
	fs.DurationVar(&c.forDur, "for", 0, "stop drawing seeds after this long")
	level := fs.String("level", "all", "Fault Level: pristine, recoverable, adversarial or all")
	fs.StringVar(&c.out, "out", "vopr-failures", "folder failing Plans are written to")
	fs.IntVar(&c.workers, "workers", runtime.NumCPU(), "runs in parallel")
	fs.BoolVar(&c.coverage, "coverage", false, "print the Coverage report (edges and Situations hit and never hit, unioned over every run)")
	fs.BoolVar(&c.guided, "guided", false, "the Coverage-Guided Swarm: keep coverage-advancing Plans in a corpus and mutate their Swarm configuration and Fault Maps")
	seed := fs.String("seed", "", "first seed; seeds are SEED, SEED+1, … (default: fresh random seeds)")
	fs.IntVar(&c.size.Nodes, "nodes", 0, "nodes per scenario (0: drawn per seed)")
	fs.IntVar(&c.size.Jobs, "jobs", 0, "jobs per scenario (0: drawn per seed)")
	fs.BoolVar(&c.verbose, "v", false, "print every run with its Swarm")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() != 0 {
		return c, fmt.Errorf("%w: unexpected argument %q (subcommands: replay, minimize)", errUsage, fs.Arg(0))
	}
	if *level == "all" {
		c.levels = sim.Levels
	} else {
		l, err := sim.ParseLevel(*level)
		if err != nil {
			return c, fmt.Errorf("%w: %w", errUsage, err)
		}
		c.levels = []sim.Level{l}
	}
	if *seed != "" {
		if _, err := fmt.Sscan(*seed, &c.base); err != nil {
			return c, fmt.Errorf("%w: -seed %q: %w", errUsage, *seed, err)
		}
		c.fixed = true
	}
	if c.workers < 1 || c.seeds < 0 || c.forDur < 0 {
		return c, fmt.Errorf("%w: -workers, -seeds and -for must not be negative", errUsage)
	}
	return c, nil
}

// item is one run to do.
type item struct {
	plan sim.Plan
	// mutated is set for a Coverage-Guided mutation of a corpus Plan.
	mutated bool
}

// outcome is one finished run.
type outcome struct {
	item item
	rep  sim.Report
	err  error
	took time.Duration
}

// seedsCmd is the VOPR loop.
func seedsCmd(args []string, stdout, stderr io.Writer) (int, error) {
	c, err := parseSeeds(args, stderr)
	if err != nil {
		return 0, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if c.forDur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.forDur)
		defer cancel()
	}
	fmt.Fprintf(stdout, "vopr: levels=%v workers=%d seeds=%d for=%v guided=%v out=%s\n", c.levels, c.workers, c.seeds, c.forDur, c.guided, c.out)

	v := &voprRun{cfg: c, stdout: stdout, byInvariant: map[string]int{}, runs: map[sim.Level]int{}}
	items := make(chan item)
	results := make(chan outcome)
	go v.produce(ctx, items)
	var wg sync.WaitGroup
	for w := range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for it := range items {
				if it.mutated {
					it.plan = sim.Mutate(it.plan, r)
				}
				if c.verbose {
					sc := &it.plan.Scenario
					v.say(fmt.Sprintf("run seed=%d level=%s nodes=%d jobs=%d mutated=%v\n%s\n", sc.Seed, sc.Level, len(sc.Nodes), sc.Work.Jobs, it.mutated, sc.Swarm))
				}
				start := time.Now()
				rep, err := sim.Run(it.plan)
				results <- outcome{item: it, rep: rep, err: err, took: time.Since(start)}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	start := time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case o, ok := <-results:
			if !ok {
				done = true
				break
			}
			if err := v.collect(o); err != nil {
				return 0, err
			}
		case <-tick.C:
			v.progress(time.Since(start))
		}
	}
	v.summary(time.Since(start))
	return v.code, nil
}

// voprRun is the state of one VOPR loop, owned by the collecting goroutine
// except for the corpus, which workers' items read under mu.
type voprRun struct {
	cfg    seedsConfig
	stdout io.Writer

	outMu sync.Mutex // serializes writes to stdout

	mu     sync.Mutex
	union  sim.Coverage
	corpus []sim.Plan

	total       int
	runs        map[sim.Level]int
	failures    int
	byInvariant map[string]int
	code        int
	events      int
	busy        time.Duration
}

// produce feeds runs until the seed count is reached or ctx is done.
func (v *voprRun) produce(ctx context.Context, items chan<- item) {
	defer close(items)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x766f7072))
	for n := 0; v.cfg.seeds == 0 || n < v.cfg.seeds; n++ {
		seed := r.Uint64()
		if v.cfg.fixed {
			seed = v.cfg.base + uint64(n)
		}
		for _, level := range v.cfg.levels {
			it := item{plan: sim.NewPlan(seed, level, v.cfg.size)}
			if v.cfg.guided && r.IntN(2) == 0 {
				v.mu.Lock()
				if len(v.corpus) > 0 {
					it = item{plan: v.corpus[r.IntN(len(v.corpus))], mutated: true}
				}
				v.mu.Unlock()
			}
			select {
			case items <- it:
			case <-ctx.Done():
				return
			}
		}
	}
}

// collect records one finished run: counts, coverage, corpus, and on a
// failure the Plan written to the output folder.
func (v *voprRun) collect(o outcome) error {
	sc := &o.rep.Plan.Scenario
	v.total++
	v.runs[sc.Level]++
	v.events += o.rep.Events
	v.busy += o.took
	v.mu.Lock()
	if v.cfg.guided && v.union.Novel(&o.rep.Coverage) && o.err == nil {
		v.corpus = append(v.corpus, o.rep.Plan)
	}
	v.union.Merge(&o.rep.Coverage)
	v.mu.Unlock()
	if v.cfg.verbose {
		v.say(fmt.Sprintf("done seed=%d level=%s err=%v events=%d took=%v\n", sc.Seed, sc.Level, o.err, o.rep.Events, o.took.Round(time.Microsecond)))
	}
	if o.err == nil {
		return nil
	}
	var f *sim.Failure
	if !errors.As(o.err, &f) {
		f = &sim.Failure{Class: sim.ClassCrash, Invariant: "run-error", Detail: o.err.Error()}
	}
	v.failures++
	v.byInvariant[f.Class.String()+" "+f.Invariant]++
	v.code = worse(v.code, classCode(f.Class))
	kind := "seed"
	if o.item.mutated {
		kind = "guided"
	}
	path := filepath.Join(v.cfg.out, fmt.Sprintf("%s-%s-%d-%s.json", sc.Level, kind, sc.Seed, f.Invariant))
	for i := 2; fileExists(path); i++ {
		path = filepath.Join(v.cfg.out, fmt.Sprintf("%s-%s-%d-%s-%d.json", sc.Level, kind, sc.Seed, f.Invariant, i))
	}
	if err := writePlan(path, o.rep.Plan); err != nil {
		return err
	}
	v.say(fmt.Sprintf("FAIL %s seed=%d level=%s: %s %s at %v: %s\n%s\nwrote %s\n",
		kind, sc.Seed, sc.Level, f.Class, f.Invariant, f.At, firstLine(f.Detail), sc.Swarm, path))
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// say writes one message to stdout from any goroutine.
func (v *voprRun) say(msg string) {
	v.outMu.Lock()
	defer v.outMu.Unlock()
	fmt.Fprint(v.stdout, msg)
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

func (v *voprRun) progress(elapsed time.Duration) {
	v.mu.Lock()
	edges, sits, pairs := v.union.Counts()
	corpus := len(v.corpus)
	v.mu.Unlock()
	v.say(fmt.Sprintf("… %d runs in %v (%.1f runs/s), %d failures; coverage %d edges, %d situations, %d pairs; corpus %d\n",
		v.total, elapsed.Round(time.Second), float64(v.total)/elapsed.Seconds(), v.failures, edges, sits, pairs, corpus))
}

func (v *voprRun) summary(elapsed time.Duration) {
	fmt.Fprintf(v.stdout, "\nvopr: %d runs in %v", v.total, elapsed.Round(time.Millisecond))
	for _, l := range sim.Levels {
		if v.runs[l] > 0 {
			fmt.Fprintf(v.stdout, ", %s %d", l, v.runs[l])
		}
	}
	rate := float64(v.total) / elapsed.Seconds()
	perCore := 0.0
	if v.busy > 0 {
		perCore = float64(v.total) / v.busy.Seconds()
	}
	fmt.Fprintf(v.stdout, "\nvopr: %.1f runs/s on %d workers, %.1f runs/s per busy core, %d events/run\n",
		rate, v.cfg.workers, perCore, v.events/max(v.total, 1))
	if v.failures == 0 {
		fmt.Fprintln(v.stdout, "vopr: every run passed")
	} else {
		keys := make([]string, 0, len(v.byInvariant))
		for k := range v.byInvariant {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(v.stdout, "vopr: %d failures, Plans in %s:\n", v.failures, v.cfg.out)
		for _, k := range keys {
			fmt.Fprintf(v.stdout, "  %-40s %d\n", k, v.byInvariant[k])
		}
	}
	if v.cfg.guided {
		fmt.Fprintf(v.stdout, "vopr: guided corpus kept %d coverage-advancing Plans\n", len(v.corpus))
	}
	if v.cfg.coverage {
		fmt.Fprint(v.stdout, "\n"+v.union.String())
	}
}
