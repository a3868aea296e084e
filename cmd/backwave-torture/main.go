// Command backwave-torture is the Torture Suite: a randomized concurrent
// workload hammers a real database — PostgreSQL (a private cluster it
// starts, or --pg-url), MariaDB (a private server it starts) or one SQLite
// file — while the run injects real
// faults, and then invariants are audited over the final state, the
// Transition Log and a client-side journal of what each process observed.
// It is a discovery instrument, never a gate: a violation is always a bug.
//
// The binary re-executes itself for each role: N worker processes running
// a real handler, a producer, an operator doing requeues, cancels,
// reschedules, pauses and limit changes, and a constant reader; on demand a
// process that is killed inside a write transaction and, on SQLite, a
// reader holding one snapshot. The fault schedule is drawn from --seed, so a
// seed replays the same faults at the same offsets (not the same
// interleavings).
//
// Usage:
//
//	backwave-torture --target postgres --smoke
//	backwave-torture --target postgres --short
//	backwave-torture --target mariadb --smoke
//	backwave-torture --target galera --smoke
//	backwave-torture --target postgres-ha --for 30m
//	backwave-torture --target postgres-ha --async --short
//	backwave-torture --target sqlite --for 30m --report /tmp/sqlite.md
//	backwave-torture --target sqlite --for 90s --plant drop-journal
//
// The run ends with one line, "N violations" (naming the audits that
// failed), and exits 1 on any violation, 2 if the run itself failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	if raw := os.Getenv(childEnv); raw != "" {
		os.Exit(childMain(raw))
	}
	os.Exit(coordinatorMain(os.Args[1:]))
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}

func coordinatorMain(args []string) int {
	fs := flag.NewFlagSet("backwave-torture", flag.ContinueOnError)
	var o options
	var seed int64
	fs.StringVar(&o.target, "target", "", "the store to torture: postgres, postgres-ha (a Patroni cluster failed over again and again), mariadb, galera or sqlite")
	fs.BoolVar(&o.async, "async", false, "postgres-ha: asynchronous replication (failovers may lose acknowledged writes; the audits name them)")
	fs.BoolVar(&o.short, "short", false, "a short run (4 minutes, at most 5)")
	fs.BoolVar(&o.smoke, "smoke", false, "a one-minute run for CI: every fault of the target once, a 500-job burst, liveness bound 2m")
	fs.DurationVar(&o.dur, "for", 0, "run length, faults then healing (30m and up for the long mode)")
	fs.Int64Var(&seed, "seed", 0, "the seed of the fault schedule (0: from the clock)")
	fs.StringVar(&o.pgURL, "pg-url", "", "a PostgreSQL to torture instead of a private cluster (never the shared one on port 5432)")
	pgPrivate := fs.Bool("pg-private", true, "start a private PostgreSQL cluster for the run (the default unless --pg-url is given)")
	fs.IntVar(&o.pgPort, "pg-port", 5499, "the private cluster's port (postgres-ha: the first node's; the second node's the next, Patroni's REST APIs +100, etcd +200)")
	fs.IntVar(&o.mdbPort, "mariadb-port", 3397, "the private MariaDB server's port (--target mariadb); Galera's first node's, the others' the next ones (--target galera)")
	fs.IntVar(&o.workers, "workers", 0, "worker processes (0: 6 on postgres and mariadb, 5 on sqlite: 8 processes on the file)")
	fs.StringVar(&o.dir, "dir", "", "work directory for journals, logs and the database (default: a new temporary one)")
	fs.StringVar(&o.plant, "plant", "", "plant a fault the audits must find: "+strings.Join(plants, ", "))
	fs.StringVar(&o.report, "report", "", "where to write the Markdown report (default: report.md in the work directory)")
	fs.Float64Var(&o.rate, "rate", 0, "calm enqueue rate, jobs/s (0: 60 on postgres, 40 on sqlite)")
	fs.IntVar(&o.burst, "burst", 0, "jobs in the event_burst (0: 10000 on postgres, 5000 on sqlite)")
	fs.DurationVar(&o.liveness, "liveness", 0, "after the faults stop, every job must be terminal within this (0: 3m, 5m for runs of 20m and up)")
	walMiB := fs.Int64("wal-bound-mib", 256, "SQLite write-ahead log bound, MiB")
	fs.IntVar(&o.handlerMs, "handler-ms", 300, "longest handler sleep, ms")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.command = "backwave-torture " + strings.Join(args, " ")
	o.walBound = *walMiB << 20
	if err := o.resolve(seed, *pgPrivate); err != nil {
		fmt.Fprintf(os.Stderr, "backwave-torture: %v\n", err)
		return 2
	}
	ctx, stop := signalContext()
	defer stop()
	vs, err := run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "backwave-torture: %v\n", err)
		fmt.Printf("run failed (seed %d)\n", o.seed)
		return 2
	}
	fmt.Println(summary(vs))
	if len(vs) > 0 {
		return 1
	}
	return 0
}

// resolve checks the flags and fills in the defaults.
func (o *options) resolve(seed int64, pgPrivate bool) error {
	switch o.target {
	case targetPostgres, targetSQLite:
	case targetPostgresHA:
		if o.pgURL != "" {
			return fmt.Errorf("--target postgres-ha starts its own Patroni cluster: give no --pg-url")
		}
		for _, p := range []int{o.pgPort, o.pgPort + 1, o.pgPort + haRESTOffset, o.pgPort + haRESTOffset + 1, o.pgPort + haEtcdOffset, o.pgPort + haEtcdOffset + 1} {
			if p < 1024 || p > 65535 || p == 5432 || p == 6432 {
				return fmt.Errorf("--pg-port %d: postgres-ha takes it and the next, +100, +101, +200 and +201; want them all in 1024–65535 and none 5432 or 6432", o.pgPort)
			}
		}
	case targetMariaDB, targetGalera:
		last := o.mdbPort
		if o.target == targetGalera {
			last += galeraNodes - 1
		}
		if o.mdbPort < 1024 || last > 65535 || (o.mdbPort <= 3306 && 3306 <= last) {
			return fmt.Errorf("--mariadb-port %d: want 1024–65535 and not 3306, the machine-wide MariaDB's (Galera's nodes take it and the next %d)", o.mdbPort, galeraNodes-1)
		}
	default:
		return fmt.Errorf("--target %q: want postgres, postgres-ha, mariadb, galera or sqlite", o.target)
	}
	if o.async && o.target != targetPostgresHA {
		return fmt.Errorf("--async is for --target postgres-ha")
	}
	if o.plant != "" && !slices.Contains(plants, o.plant) {
		return fmt.Errorf("--plant %q: want one of %s", o.plant, strings.Join(plants, ", "))
	}
	switch {
	case o.smoke && (o.short || o.dur != 0):
		return fmt.Errorf("--smoke is a one-minute run: give it without --short or --for")
	case o.smoke:
		o.dur = time.Minute
		if o.burst == 0 {
			o.burst = 500
		}
		if o.liveness == 0 {
			o.liveness = 2 * time.Minute
		}
	case o.short && o.dur == 0:
		o.dur = 4 * time.Minute
	case o.short && o.dur > 5*time.Minute:
		return fmt.Errorf("--short runs at most 5 minutes, not %s", o.dur)
	case o.dur == 0:
		return fmt.Errorf("give --smoke, --short or --for")
	case o.dur < 30*time.Second:
		return fmt.Errorf("--for %s: at least 30s", o.dur)
	}
	if o.target == targetPostgres {
		if o.pgURL != "" {
			if err := checkURL(o.pgURL); err != nil {
				return err
			}
		} else if !pgPrivate {
			return fmt.Errorf("--pg-private=false needs --pg-url")
		}
	}
	if seed == 0 {
		seed = time.Now().UnixNano() & 0x7fffffffffff
	}
	o.seed = uint64(seed)
	def := func(v *int, pg, sq int) {
		if *v == 0 {
			*v = pg
			if o.target == targetSQLite {
				*v = sq
			}
		}
	}
	def(&o.workers, 6, 5)
	def(&o.burst, 10000, 5000)
	if o.rate == 0 {
		o.rate = 60
		if o.target == targetSQLite {
			o.rate = 40
		}
	}
	if o.liveness == 0 {
		o.liveness = 3 * time.Minute
		if o.dur >= 20*time.Minute {
			o.liveness = 5 * time.Minute
		}
	}
	if o.workers < 1 || o.rate <= 0 || o.burst < 0 || o.handlerMs < 0 {
		return fmt.Errorf("--workers, --rate, --burst and --handler-ms must be positive")
	}
	return nil
}
