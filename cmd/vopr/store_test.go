package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/internal/sim"
	"github.com/backwave/backwave/job"
)

// TestPlansAgreeOnSQLite replays every checked-in Plan on memstore and on a
// fresh SQLite file and requires the same outcome history: one Plan
// replayed against memstore and SQLite must agree (STYLE.md, pebble's
// metamorphic testing; glossary: Plan).
func TestPlansAgreeOnSQLite(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "internal", "sim", "testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no plans: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			t.Parallel()
			if data, err := os.ReadFile(file); err == nil && !plant.Enabled && bytes.Contains(data, []byte(`"mutation"`)) {
				t.Skip("a planted bug's Plan: planted bugs are compiled in only with -tags backwave_plant")
			}
			p, err := readPlan(file)
			if err != nil {
				t.Fatal(err)
			}
			if p.Scenario.Mutation.InStore() {
				t.Skipf("the planted bug %q lives in memstore only: SQLite cannot plant it", p.Scenario.Mutation)
			}
			if raceEnabled && (p.Scenario.Work.Jobs > 20 || len(p.Scenario.Nodes) > 2) {
				t.Skip("the pure-Go SQLite engine runs an order of magnitude slower under the race detector: the larger Plans are replayed without -race")
			}
			var out, errOut bytes.Buffer
			uri := "sqlite://" + filepath.Join(t.TempDir(), "plan.db")
			code := run([]string{"replay", "-store", uri, file}, &out, &errOut)
			if _, cause, ok := strings.Cut(out.String(), "\n  cause: "); ok {
				t.Skipf("cannot agree: %s", strings.TrimSpace(cause))
			}
			if code == exitDiverge || !strings.Contains(out.String(), "\nagree: ") {
				t.Fatalf("replay -store exited %d:\n%s%s", code, out.String(), errOut.String())
			}
			t.Log(lastLine(out.String()))
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestReplayOnStoreRefuses: a planted bug in memstore cannot be compared,
// an existing file is never reused, and only sqlite:// names another store.
func TestReplayOnStoreRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := sim.NewPlan(1, sim.Pristine, sim.Size{Jobs: 5})
	p.Scenario.Mutation = plant.FenceIgnoresAttempt
	planted := filepath.Join(dir, "planted.json")
	if err := writePlan(planted, p); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"replay", "-store", "sqlite://" + filepath.Join(dir, "a.db"), planted}, &out, &errOut)
	switch {
	case !plant.Enabled && (code != exitIO || !strings.Contains(errOut.String(), "backwave_plant")):
		t.Fatalf("planted, in a build without planted bugs: exited %d:\n%s%s", code, out.String(), errOut.String())
	case plant.Enabled && (code != exitUsage || !strings.Contains(out.String(), "cannot compare")):
		t.Fatalf("planted: exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	existing := filepath.Join(dir, "b.db")
	if err := os.WriteFile(existing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.json")
	if err := writePlan(plain, sim.NewPlan(1, sim.Pristine, sim.Size{Jobs: 5})); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"replay", "-store", "sqlite://" + existing, plain}, &out, &errOut); code != exitIO {
		t.Fatalf("existing file: exited %d:\n%s", code, errOut.String())
	}
	if code := run([]string{"replay", "-store", "postgres://x/y", plain}, &out, &errOut); code != exitUsage {
		t.Fatalf("postgres: exited %d:\n%s", code, errOut.String())
	}
}

// TestDivergeFindsTheFirstDifference: the comparison names the first state
// change, in the reference's order, where two histories part, then a final
// state, then how the runs ended.
func TestDivergeFindsTheFirstDifference(t *testing.T) {
	t.Parallel()
	claim := core.Edge{From: job.StateScheduled, To: job.StateRunning, Via: core.ViaClaim}
	succeed := core.Edge{From: job.StateRunning, To: job.StateSucceeded, Via: core.ViaSucceed}
	retry := core.Edge{From: job.StateRunning, To: job.StateScheduled, Via: core.ViaRetry}
	hist := func(steps ...[]step) *history {
		h := &history{steps: steps}
		for _, s := range steps {
			h.n += len(s)
			h.final = append(h.final, s[len(s)-1].edge.To.String())
		}
		return h
	}
	a := hist(
		[]step{{seq: 1, edge: claim, attempt: 1}, {seq: 4, edge: succeed, attempt: 1}},
		[]step{{seq: 2, edge: claim, attempt: 1}, {seq: 3, edge: retry, attempt: 1}},
	)
	b := hist(
		[]step{{seq: 1, edge: claim, attempt: 1}, {seq: 3, edge: retry, attempt: 1}},
		[]step{{seq: 2, edge: claim, attempt: 1}, {seq: 4, edge: succeed, attempt: 1}},
	)
	if d := diverge(a, a); d != nil {
		t.Fatalf("a history diverges from itself: %+v", d)
	}
	d := diverge(a, b)
	if d == nil || d.job != 2 || d.index != 1 {
		t.Fatalf("want job 2's second change (#3 comes before #4), got %+v", d)
	}
	c := hist([]step{{seq: 1, edge: claim, attempt: 1}, {seq: 2, edge: succeed, attempt: 1}})
	e := hist([]step{{seq: 1, edge: claim, attempt: 1}, {seq: 2, edge: succeed, attempt: 1}})
	e.final[0] = "purged"
	if d := diverge(c, e); d == nil || d.index != -1 {
		t.Fatalf("want the final state, got %+v", d)
	}
}

// TestStoreRestartsOnSQLite: a Plan with store restarts (the file closed
// and opened again) agrees on SQLite: committed writes survive a restart
// and the hint subscribers do not, as in memstore's crash-clone.
func TestStoreRestartsOnSQLite(t *testing.T) {
	t.Parallel()
	rep, err := sim.Run(sim.NewPlan(22, sim.Recoverable, sim.Size{Jobs: 10, Nodes: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Plan.Faults.Restarts) == 0 {
		t.Fatal("the seed no longer draws store restarts; pick another")
	}
	r, err := replayOn(rep.Plan, "sqlite://"+filepath.Join(t.TempDir(), "plan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if d := r.print(&out); d != nil {
		t.Fatalf("%d store restarts:\n%s", len(rep.Plan.Faults.Restarts), out.String())
	}
	t.Logf("%d store restarts: %s", len(rep.Plan.Faults.Restarts), lastLine(out.String()))
}
