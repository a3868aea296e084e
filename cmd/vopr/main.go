// Command vopr is the VOPR Runner: the continuous discovery engine built on
// the Simulator (package internal/sim). It draws fresh seeds without end — or a fixed
// number, or for a while — runs each at the chosen Fault Levels on every
// core, and on any failure writes the failing Plan to a folder and keeps
// going. It also replays a Plan, minimizes one (the Seed Minimizer) and runs
// the Coverage-Guided Swarm.
//
// Usage:
//
//	vopr [flags]                      run seeds (see vopr -h)
//	vopr replay [-v] [-panic] PLAN    replay a Plan file
//	vopr replay -store sqlite://FILE PLAN
//	vopr replay -store postgres://… PLAN
//	vopr replay -store mariadb://… PLAN
//	                                  replay a Plan on memstore and on a fresh
//	                                  SQLite file, PostgreSQL schema or
//	                                  MariaDB table prefix and compare the
//	                                  outcomes
//	vopr minimize [flags] PLAN        shrink a failing Plan's Fault Map
//
// Exit codes: 0 every run passed; 1 a safety oracle tripped; 2
// Drain-Liveness tripped; 3 the harness crashed (a panic, a blown budget);
// 4 a replay on another store diverged from memstore's; 64 bad usage (a
// Plan with a planted bug in memstore cannot be compared); 74 a Plan could
// not be read or written, or the other store failed. When several classes
// failed, safety wins over liveness, and liveness over crash.
//
// # Replaying on another store
//
// With -store, replay runs the Plan on memstore and on a Storage Adapter
// — a fresh SQLite file (sqlite://FILE), or a fresh schema on a PostgreSQL
// server (postgres://…; the schema= the URI names, which must not exist
// and is kept, or a new one dropped afterwards), or a fresh table prefix
// in a MariaDB or MySQL database (mariadb://… or mysql://…, on the same
// terms: the schema= prefix must have no tables and is kept, a new one's
// tables are dropped afterwards) — on the run's Virtual Time
// (a store restart closes and reopens the adapter), both with the store's
// time quantized to the adapters' microseconds (sim.Options.StorePrecision),
// and requires the same outcome history: per job the same sequence of
// (Attempt, edge) and the same final state. The adapter is made a run's
// Store by sim.NewFeedStore from the Storage Contract alone: the change feed
// is a walk of its Transition Log in commit order, the Wake-Up Hints the
// Simulator's rule. It prints the first divergence, and its cause when it
// is one neither store is at fault for: the Storage Contract leaves which
// qualifying jobs a purge batch takes to the store (store.Retention), so a
// Plan whose retention sweeps fill a batch may part there. The oracles run
// on both. It also says whether the microsecond memstore replay kept the
// plain replay's outcome history. A Plan whose planted bug lives in
// memstore cannot be compared.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/backwave/backwave/internal/sim"
)

// Exit codes.
const (
	exitOK       = 0
	exitSafety   = 1
	exitLiveness = 2
	exitCrash    = 3
	exitDiverge  = 4
	exitUsage    = 64
	exitIO       = 74
)

// errUsage marks a command-line mistake.
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	var code int
	var err error
	switch {
	case len(args) > 0 && args[0] == "replay":
		code, err = replayCmd(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "minimize":
		code, err = minimizeCmd(args[1:], stdout, stderr)
	default:
		code, err = seedsCmd(args, stdout, stderr)
	}
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "vopr:", err)
		return exitUsage
	case err != nil:
		fmt.Fprintln(stderr, "vopr:", err)
		return exitIO
	}
	return code
}

// classCode maps a failure class to its exit code.
func classCode(c sim.Class) int {
	switch c {
	case sim.ClassSafety:
		return exitSafety
	case sim.ClassLiveness:
		return exitLiveness
	}
	return exitCrash
}

// worse returns the more severe of two exit codes: safety, then liveness,
// then crash.
func worse(a, b int) int {
	rank := func(c int) int {
		switch c {
		case exitSafety:
			return 3
		case exitLiveness:
			return 2
		case exitCrash:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}
