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

// replayStores are the stores a Plan is replayed on beside memstore: a
// fresh SQLite file, a fresh schema on the PostgreSQL server
// BACKWAVE_TEST_POSTGRES_URL names and a fresh table prefix in the MariaDB
// database BACKWAVE_TEST_MARIADB_URL names (each skipped when its variable
// is unset).
func replayStores(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "plan.db") },
		"mariadb": func(t *testing.T) string {
			u := os.Getenv("BACKWAVE_TEST_MARIADB_URL")
			if u == "" {
				t.Skip("BACKWAVE_TEST_MARIADB_URL is unset: set it to a MariaDB database URL (mariadb://root@127.0.0.1:3306/test) to replay Plans on MariaDB")
			}
			return u
		},
		"postgres": func(t *testing.T) string {
			u := os.Getenv("BACKWAVE_TEST_POSTGRES_URL")
			if u == "" {
				t.Skip("BACKWAVE_TEST_POSTGRES_URL is unset: set it to a PostgreSQL database URL to replay Plans on PostgreSQL")
			}
			return u
		},
	}
}

// TestPlansAgreeOnEveryStore replays every checked-in Plan on memstore and
// on each SQL adapter (a fresh SQLite file, a fresh PostgreSQL schema, a
// fresh MariaDB table prefix) and requires the same outcome history: one
// Plan replayed against memstore, SQLite, PostgreSQL and MariaDB must agree (STYLE.md, pebble's metamorphic
// testing; glossary: Plan).
func TestPlansAgreeOnEveryStore(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "internal", "sim", "testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no plans: %v", err)
	}
	for name, uriFor := range replayStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
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
						t.Skipf("the planted bug %q lives in memstore only: %s cannot plant it", p.Scenario.Mutation, name)
					}
					if raceEnabled && name == "sqlite" && (p.Scenario.Work.Jobs > 20 || len(p.Scenario.Nodes) > 2) {
						t.Skip("the pure-Go SQLite engine runs an order of magnitude slower under the race detector: the larger Plans are replayed without -race")
					}
					var out, errOut bytes.Buffer
					code := run([]string{"replay", "-store", uriFor(t), file}, &out, &errOut)
					if _, cause, ok := strings.Cut(out.String(), "\n  cause: "); ok {
						t.Skipf("cannot agree: %s", strings.TrimSpace(cause))
					}
					if code == exitDiverge || !strings.Contains(out.String(), "\nagree: ") {
						t.Fatalf("replay -store exited %d:\n%s%s", code, out.String(), errOut.String())
					}
					t.Log(lastLine(out.String()))
				})
			}
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestReplayOnStoreRefuses: a planted bug in memstore cannot be compared,
// an existing file is never reused, a MariaDB prefix that has tables is
// never reused, and only sqlite://, postgres:// and mariadb:// (mysql://)
// name another store.
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
	if code := run([]string{"replay", "-store", "redis://x/y", plain}, &out, &errOut); code != exitUsage {
		t.Fatalf("redis: exited %d:\n%s", code, errOut.String())
	}
	if code := run([]string{"replay", "-store", "mariadb://x/y?schema=9bad", plain}, &out, &errOut); code != exitUsage {
		t.Fatalf("mariadb, a bad prefix: exited %d:\n%s", code, errOut.String())
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

// TestStoreRestartsOnEveryStore: a Plan with store restarts (the adapter
// closed and opened again) agrees on each SQL adapter: committed writes
// survive a restart and the hint subscribers do not, as in memstore's
// crash-clone.
func TestStoreRestartsOnEveryStore(t *testing.T) {
	t.Parallel()
	rep, err := sim.Run(sim.NewPlan(22, sim.Recoverable, sim.Size{Jobs: 10, Nodes: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Plan.Faults.Restarts) == 0 {
		t.Fatal("the seed no longer draws store restarts; pick another")
	}
	for name, uriFor := range replayStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, err := replayOn(rep.Plan, uriFor(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if d := r.print(&out); d != nil {
				t.Fatalf("%d store restarts:\n%s", len(rep.Plan.Faults.Restarts), out.String())
			}
			t.Logf("%d store restarts: %s", len(rep.Plan.Faults.Restarts), lastLine(out.String()))
		})
	}
}
