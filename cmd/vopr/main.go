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
//	vopr minimize [flags] PLAN        shrink a failing Plan's Fault Map
//
// Exit codes: 0 every run passed; 1 a safety oracle tripped; 2
// Drain-Liveness tripped; 3 the harness crashed (a panic, a blown budget);
// 64 bad usage; 74 a Plan could not be read or written. When several classes
// failed, safety wins over liveness, and liveness over crash.
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
