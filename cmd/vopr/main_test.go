package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/internal/sim"
)

// The VOPR Runner's interface is its exit codes per failure class (glossary:
// VOPR Runner).
func TestExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run([]string{"-seeds", "4", "-level", "all", "-seed", "1", "-out", dir, "-coverage"}, &out, &errOut); code != exitOK {
		t.Fatalf("passing seeds exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"every run passed", "coverage over 12 runs", "NEVER", "stale-outcome-fenced"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, args := range [][]string{{"-level", "sideways"}, {"-nope"}, {"replay"}, {"minimize", "a", "b"}, {"stray"}} {
		if code := run(args, &out, &errOut); code != exitUsage {
			t.Errorf("%v exited %d, want %d", args, code, exitUsage)
		}
	}
	if code := run([]string{"replay", filepath.Join(dir, "missing.json")}, &out, &errOut); code != exitIO {
		t.Errorf("replay of a missing file exited %d, want %d", code, exitIO)
	}
}

// plantedPlan writes the first failing Plan of a planted bug to dir.
func plantedPlan(t *testing.T, dir string, m plant.Bug, level sim.Level) string {
	t.Helper()
	for seed := uint64(1); seed < 2000; seed++ {
		p := sim.NewPlan(seed, level, sim.Size{})
		p.Scenario.Mutation = m
		rep, err := sim.Run(p)
		var f *sim.Failure
		if errors.As(err, &f) {
			path := filepath.Join(dir, "plan.json")
			if err := writePlan(path, rep.Plan); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
	t.Fatalf("%s not found", m)
	return ""
}

// TestReplayAndMinimize: replay exits with the failure's class; minimize
// keeps the original and writes a smaller Plan that trips the same
// invariant (glossary: Seed Minimizer).
func TestReplayAndMinimize(t *testing.T) {
	if !plant.Enabled {
		t.Skip("planted bugs are compiled in only with -tags backwave_plant")
	}
	t.Parallel()
	dir := t.TempDir()
	path := plantedPlan(t, dir, plant.FenceIgnoresAttempt, sim.Recoverable)
	var out, errOut bytes.Buffer
	if code := run([]string{"replay", path}, &out, &errOut); code != exitSafety {
		t.Fatalf("replay exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "FAIL safety effect-once") || !strings.Contains(out.String(), "swarm ") {
		t.Fatalf("replay output:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"minimize", "-shrink-scenario", path}, &out, &errOut); code != exitSafety {
		t.Fatalf("minimize exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	for _, f := range []string{path, filepath.Join(dir, "plan.min.json"), filepath.Join(dir, "plan.shrunk.json")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"replay", filepath.Join(dir, "plan.min.json")}, &out, &errOut); code != exitSafety || !strings.Contains(out.String(), "effect-once") {
		t.Fatalf("minimized replay exited %d:\n%s", code, out.String())
	}
}

// TestWorseClass: safety outranks liveness, which outranks crash.
func TestWorseClass(t *testing.T) {
	t.Parallel()
	if worse(exitCrash, exitSafety) != exitSafety || worse(exitLiveness, exitCrash) != exitLiveness || worse(exitOK, exitCrash) != exitCrash {
		t.Fatal("severity order is safety, liveness, crash")
	}
}

// TestGuided runs the Coverage-Guided Swarm briefly.
func TestGuided(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := run([]string{"-seeds", "30", "-level", "adversarial", "-guided", "-seed", "5", "-out", t.TempDir()}, &out, &errOut); code != exitOK {
		t.Fatalf("guided run exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "guided corpus kept") {
		t.Fatalf("output:\n%s", out.String())
	}
}

// TestFailureIsWrittenAndTheLoopGoesOn: a failing run's Plan lands in the
// output folder, the exit code takes the failure's class, and later runs
// are still counted.
func TestFailureIsWrittenAndTheLoopGoesOn(t *testing.T) {
	if !plant.Enabled {
		t.Skip("planted bugs are compiled in only with -tags backwave_plant")
	}
	t.Parallel()
	dir := t.TempDir()
	var out bytes.Buffer
	v := &voprRun{cfg: seedsConfig{out: dir}, stdout: &out, byInvariant: map[string]int{}, runs: map[sim.Level]int{}}
	for seed := uint64(1); ; seed++ {
		p := sim.NewPlan(seed, sim.Pristine, sim.Size{})
		p.Scenario.Mutation = plant.ClaimIgnoresLimit
		rep, err := sim.Run(p)
		if err == nil {
			continue
		}
		if err := v.collect(outcome{item: item{plan: p}, rep: rep, err: err}); err != nil {
			t.Fatal(err)
		}
		break
	}
	rep, err := sim.Run(sim.NewPlan(1, sim.Pristine, sim.Size{}))
	if err := v.collect(outcome{rep: rep, err: err}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "pristine-seed-*-concurrency-limit.json"))
	if len(files) != 1 || v.code != exitSafety || v.total != 2 || v.failures != 1 {
		t.Fatalf("files %v code %d total %d failures %d\n%s", files, v.code, v.total, v.failures, out.String())
	}
	if _, err := readPlan(files[0]); err != nil {
		t.Fatal(err)
	}
}
