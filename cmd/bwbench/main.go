package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Scenario names, in the order they run and print.
const (
	scInsert     = "insert"
	scDrain      = "drain"
	scSteady     = "steady"
	scLatencyOn  = "latency-hints-on"
	scLatencyOff = "latency-hints-off"
	scLimit      = "limit"
	scRate       = "rate"
	scHistoryOff = "drain-history-off"
	scEncrypted  = "drain-encrypted"
	// scObserversIdle is BackWave's drain with an Observer whose every
	// callback does nothing: the cost of the Observer path itself.
	scObserversIdle = "drain-observers-idle"
	// scTransitionObserverIdle is BackWave's drain with one Transition
	// Observer registered for a state the drain never reaches
	// (Quarantined): the walk of the Transition Log runs and delivers
	// nothing, the cost of an idle registration.
	scTransitionObserverIdle = "drain-transition-observer-idle"
	// scFleetSkip is BackWave's drain while the fleet registry shows
	// another live node handling a Wire Name this one does not, so every
	// claim carries a Skip list (store.ClaimParams.Skip).
	scFleetSkip = "drain-fleet-skip"
	// scDrainBatch is BackWave's drain through a batch handler that takes
	// up to 100 jobs a call (backwave.AddBatchHandler).
	scDrainBatch = "drain-batch"
	scRSS        = "rss"
)

// pairedVariant is a variant of BackWave's drain, measured alternately with
// the default drain in the same loop (pairedDrain) rather than against the
// drain row, which ran at another time on a machine that may have drifted
// since.
type pairedVariant struct {
	// ratio names the paired ratio its row prints, variant/default.
	ratio string
	// river: River's drain row is a peer of the variant (the variant
	// changes only what River has no counterpart of).
	river bool
}

// pairedVariants are the drain variants by scenario name.
var pairedVariants = map[string]pairedVariant{
	scLimit:                  {ratio: "limit/unlimited"},
	scRate:                   {ratio: "idle rate/unrated"},
	scHistoryOff:             {ratio: "history off/on", river: true},
	scEncrypted:              {ratio: "encrypted/plain"},
	scObserversIdle:          {ratio: "observers idle/none", river: true},
	scTransitionObserverIdle: {ratio: "transition observer idle/none", river: true},
	scFleetSkip:              {ratio: "fleet skip/none", river: true},
	scDrainBatch:             {ratio: "batch/single", river: true},
}

// isPaired reports whether sc is a drain variant (pairedVariants).
func isPaired(sc string) bool {
	_, ok := pairedVariants[sc]
	return ok
}

var allScenarios = []string{scInsert, scDrain, scHistoryOff, scEncrypted, scObserversIdle, scTransitionObserverIdle, scFleetSkip, scDrainBatch, scSteady, scLatencyOn, scLatencyOff, scLimit, scRate, scNoisy, scDrainLag, scLatencyLag, scDrainIdleTx, scRSS}

// Target names.
const (
	tgPostgres = "postgres"
	tgSQLite   = "sqlite"
)

// System names, as the JSON output spells them.
const (
	sysBackWave = "backwave"
	sysRiver    = "river"
	sysRaw      = "raw"
)

// allSystems are every system bwbench knows, in the order they run: the
// peers (graphile-worker, pg-boss, asynq) are skipped with a message when
// they are not installed or their server is not reachable.
var allSystems = []string{sysBackWave, sysRiver, sysRaw, sysGraphile, sysPgBoss, sysAsynq}

// allTargets are the storage targets; redis carries only asynq's rows.
var allTargets = []string{tgPostgres, tgPgBouncer, tgSQLite, tgMariaDB, tgRedis}

// sizes are the amounts of work each scenario does; every one is settable.
type sizes struct {
	Insert         int           `json:"insert"`
	Drain          int           `json:"drain_postgres"`
	DrainSQLite    int           `json:"drain_sqlite"`
	DrainMariaDB   int           `json:"drain_mariadb"`
	SteadyWarmup   time.Duration `json:"steady_warmup"`
	SteadyWindow   time.Duration `json:"steady_window"`
	LatencyJobs    int           `json:"latency_jobs"`
	LatencyRate    int           `json:"latency_rate_per_sec"`
	HintsOffPoll   time.Duration `json:"hints_off_poll_interval"`
	RSS            []int         `json:"rss_backlogs"`
	RiverSQLiteCap int           `json:"river_sqlite_drain"`
	Noisy          noisySizes    `json:"noisy"`
}

// quickSizes finish every scenario on both targets in under three minutes
// on two cores.
var quickSizes = sizes{
	Insert: 10_000, Drain: 10_000, DrainSQLite: 10_000, DrainMariaDB: 2_000,
	SteadyWarmup: 500 * time.Millisecond, SteadyWindow: 1500 * time.Millisecond,
	LatencyJobs: 100, LatencyRate: 100, HintsOffPoll: 100 * time.Millisecond,
	RSS: []int{10_000, 20_000}, RiverSQLiteCap: 3_000,
	Noisy: noisySizes{Flood: 20_000, SmallKeys: 50, PerKey: 20},
}

// fullSizes are the default.
var fullSizes = sizes{
	Insert: 100_000, Drain: 100_000, DrainSQLite: 100_000, DrainMariaDB: 10_000,
	SteadyWarmup: 2 * time.Second, SteadyWindow: 10 * time.Second,
	LatencyJobs: 1_000, LatencyRate: 100, HintsOffPoll: 100 * time.Millisecond,
	RSS: []int{10_000, 1_000_000}, RiverSQLiteCap: 20_000,
	Noisy: noisySizes{Flood: 100_000, SmallKeys: 50, PerKey: 20},
}

// config is the parsed command line.
type config struct {
	mode       string
	quick      bool
	scenarios  []string
	targets    []string
	systems    []string
	runs       int
	pgURL      string
	mariaURL   string
	redisAddr  string
	node       string
	peersDir   string
	sqliteDir  string
	sqliteSync string
	jsonPath   string
	cpuProfile string
	memProfile string
	sizes      sizes
	verbose    bool
	calls      bool
	cpu        bool
	// overrides are the -backwave, -river and -raw settings, by system.
	overrides map[string]string
	// pgExperiment is -backwave-pg-sql: statements run on each of
	// BackWave's PostgreSQL schemas once it is migrated.
	pgExperiment string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == rssChildArg {
		if err := rssChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bwbench rss child:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "bwbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bwbench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bwbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	var scenarios, targets, systems, rss string
	fs.StringVar(&cfg.mode, "mode", "local", "local (indicative, never published) or official (the pinned instance)")
	fs.BoolVar(&cfg.quick, "quick", false, "small sizes: every scenario on both targets in under 3 minutes on 2 cores")
	fs.StringVar(&scenarios, "scenarios", strings.Join(allScenarios, ","), "comma-separated scenarios (latency selects both latency rows)")
	fs.StringVar(&targets, "targets", strings.Join(allTargets, ","), "comma-separated targets (redis: asynq's rows only)")
	fs.StringVar(&systems, "systems", strings.Join(allSystems, ","), "comma-separated systems")
	fs.IntVar(&cfg.runs, "runs", 0, "runs per row, alternating between systems (default 3, 2 with -quick)")
	fs.StringVar(&cfg.pgURL, "postgres", "", "PostgreSQL URL (default $BWBENCH_POSTGRES_URL, then $BACKWAVE_TEST_POSTGRES_URL)")
	fs.StringVar(&cfg.mariaURL, "mariadb", "", "MariaDB URL of the mariadb target, mariadb://user@host:port/db (default $BWBENCH_MARIADB_URL, then $BACKWAVE_TEST_MARIADB_URL)")
	fs.StringVar(&cfg.redisAddr, "redis", "", "Redis address of the redis target (default $BWBENCH_REDIS_ADDR, then 127.0.0.1:6379)")
	fs.StringVar(&cfg.node, "node", "node", "the Node.js executable the graphile-worker and pg-boss rows run under")
	fs.StringVar(&cfg.peersDir, "peers-dir", "peers", "directory of peer.mjs and the Node.js peers' node_modules (installed by its install.sh)")
	fs.StringVar(&cfg.sqliteDir, "sqlite-dir", "", "directory for the SQLite files (default a new temporary directory)")
	fs.StringVar(&cfg.sqliteSync, "sqlite-synchronous", "full", "SQLite synchronous pragma for every system: full or normal")
	fs.StringVar(&cfg.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&cfg.memProfile, "memprofile", "", "write a heap allocation profile of the whole run to this file")
	fs.BoolVar(&cfg.verbose, "v", false, "log each run to stderr")
	fs.BoolVar(&cfg.cpu, "cpu", false, "print the CPU time per job of each measured interval to stderr: the bench process and, on PostgreSQL, the system's server backends")
	fs.BoolVar(&cfg.calls, "calls", false, "print BackWave's store calls of each run to stderr: count, jobs per call, mean and max time")
	cfg.overrides = map[string]string{}
	for _, sys := range allSystems {
		fs.Func(sys, "override "+sys+"'s tuned settings, e.g. pumps=4,poll=20ms (names as printed)", func(v string) error {
			cfg.overrides[sys] = v
			return nil
		})
	}
	fs.StringVar(&cfg.pgExperiment, "backwave-pg-sql", "", "experiments: SQL run on each of BackWave's PostgreSQL schemas once migrated, every run, {schema} replaced by its name (its rows say so)")
	size := fs.Int("insert", 0, "jobs per insert run")
	drain := fs.Int("drain", 0, "backlog per drain and limit run on PostgreSQL")
	drainSQLite := fs.Int("drain-sqlite", 0, "backlog per drain and limit run on SQLite")
	drainMaria := fs.Int("drain-mariadb", 0, "backlog per drain run on MariaDB")
	riverSQLite := fs.Int("drain-river-sqlite", 0, "backlog of River's drain on SQLite (it completes one row at a time)")
	warm := fs.Duration("steady-warmup", 0, "steady: warm-up before the window")
	window := fs.Duration("steady-window", 0, "steady: measured window")
	latJobs := fs.Int("latency-jobs", 0, "latency: jobs per run")
	latRate := fs.Int("latency-rate", 0, "latency: enqueues per second")
	poll := fs.Duration("hints-off-poll", 0, "latency-hints-off: the poll interval of every system")
	noisyFlood := fs.Int("noisy-flood", 0, "noisy-neighbour: the flooding key's jobs (the 50 small keys enqueue 20 each)")
	fs.StringVar(&rss, "rss", "", "rss: comma-separated backlog sizes")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch cfg.mode {
	case "local", "official":
	default:
		return cfg, fmt.Errorf("-mode %q: want local or official", cfg.mode)
	}
	switch cfg.sqliteSync {
	case "full", "normal":
	default:
		return cfg, fmt.Errorf("-sqlite-synchronous %q: want full or normal", cfg.sqliteSync)
	}
	cfg.sizes = fullSizes
	if cfg.quick {
		cfg.sizes = quickSizes
	}
	if cfg.runs == 0 {
		cfg.runs = 3
		if cfg.quick {
			cfg.runs = 2
		}
	}
	if cfg.runs < 1 {
		return cfg, fmt.Errorf("-runs %d: want at least 1", cfg.runs)
	}
	setInt := func(dst *int, v int, name string) error {
		switch {
		case v < 0:
			return fmt.Errorf("-%s %d is negative", name, v)
		case v > 0:
			*dst = v
		}
		return nil
	}
	setDur := func(dst *time.Duration, v time.Duration, name string) error {
		switch {
		case v < 0:
			return fmt.Errorf("-%s %v is negative", name, v)
		case v > 0:
			*dst = v
		}
		return nil
	}
	if err := errors.Join(
		setInt(&cfg.sizes.Insert, *size, "insert"),
		setInt(&cfg.sizes.Drain, *drain, "drain"),
		setInt(&cfg.sizes.DrainSQLite, *drainSQLite, "drain-sqlite"),
		setInt(&cfg.sizes.DrainMariaDB, *drainMaria, "drain-mariadb"),
		setInt(&cfg.sizes.RiverSQLiteCap, *riverSQLite, "drain-river-sqlite"),
		setDur(&cfg.sizes.SteadyWarmup, *warm, "steady-warmup"),
		setDur(&cfg.sizes.SteadyWindow, *window, "steady-window"),
		setInt(&cfg.sizes.LatencyJobs, *latJobs, "latency-jobs"),
		setInt(&cfg.sizes.LatencyRate, *latRate, "latency-rate"),
		setDur(&cfg.sizes.HintsOffPoll, *poll, "hints-off-poll"),
		setInt(&cfg.sizes.Noisy.Flood, *noisyFlood, "noisy-flood"),
	); err != nil {
		return cfg, err
	}
	if rss != "" {
		cfg.sizes.RSS = nil
		for f := range strings.SplitSeq(rss, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return cfg, fmt.Errorf("-rss %q: want positive integers", rss)
			}
			cfg.sizes.RSS = append(cfg.sizes.RSS, n)
		}
	}
	var err error
	if cfg.scenarios, err = pick("scenario", scenarios, allScenarios, map[string][]string{"latency": {scLatencyOn, scLatencyOff}}); err != nil {
		return cfg, err
	}
	if cfg.targets, err = pick("target", targets, allTargets, nil); err != nil {
		return cfg, err
	}
	if cfg.systems, err = pick("system", systems, allSystems, nil); err != nil {
		return cfg, err
	}
	if cfg.pgURL == "" {
		cfg.pgURL = cmpOr(os.Getenv("BWBENCH_POSTGRES_URL"), os.Getenv("BACKWAVE_TEST_POSTGRES_URL"))
	}
	if cfg.mariaURL == "" {
		cfg.mariaURL = cmpOr(os.Getenv("BWBENCH_MARIADB_URL"), os.Getenv("BACKWAVE_TEST_MARIADB_URL"))
	}
	if cfg.redisAddr == "" {
		cfg.redisAddr = cmpOr(os.Getenv("BWBENCH_REDIS_ADDR"), "127.0.0.1:6379")
	}
	return cfg, nil
}

// pick parses a comma-separated list against the known names (and aliases),
// keeping the known order.
func pick(kind, list string, known []string, alias map[string][]string) ([]string, error) {
	want := map[string]bool{}
	for f := range strings.SplitSeq(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if a, ok := alias[f]; ok {
			for _, x := range a {
				want[x] = true
			}
			continue
		}
		if !slices.Contains(known, f) {
			return nil, fmt.Errorf("unknown %s %q (known: %s)", kind, f, strings.Join(known, ", "))
		}
		want[f] = true
	}
	var out []string
	for _, k := range known {
		if want[k] {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s selected", kind)
	}
	return out, nil
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// run measures every selected row and prints the report.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	level := slog.LevelWarn
	if cfg.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.memProfile != "" {
		defer func() {
			if err := writeAllocs(cfg.memProfile); err != nil {
				fmt.Fprintf(stderr, "bwbench: %v\n", err)
			}
		}()
	}
	b, err := newBench(ctx, cfg, log, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	man := collectManifest(ctx, b)
	started := time.Now()
	var results []result
	for _, tg := range cfg.targets {
		if !b.hasTarget(tg) {
			fmt.Fprintf(stderr, "bwbench: target %s skipped: %s\n", tg, b.skipped[tg])
			continue
		}
		for _, sc := range cfg.scenarios {
			rs, err := b.measure(ctx, sc, tg)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", sc, tg, err)
			}
			results = append(results, rs...)
		}
	}
	man.finish(started)
	rep := report{Manifest: man, Results: results}
	if err := rep.writeMarkdown(stdout, cfg); err != nil {
		return err
	}
	if cfg.jsonPath != "" {
		if err := rep.writeJSON(cfg.jsonPath); err != nil {
			return err
		}
	}
	return nil
}

// writeAllocs writes the heap allocation profile (every allocation since
// the process started, sampled) to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("memory profile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("memory profile: %w", err)
	}
	return f.Close()
}
