package sim

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
)

var updatePlans = flag.Bool("update-plans", false, "rewrite the targeted Dependency Plans under testdata/")

// TestGraphCoverage: the workload's Dependency graphs reach every latch
// edge and Situation over the battery's seeds, and every run passes the
// Dependency oracles at every level (glossary: Dependency, Awaiting
// Parent, Cancelled; Fault Level: Drain-Liveness includes graphs).
func TestGraphCoverage(t *testing.T) {
	t.Parallel()
	want := map[Level][]Situation{
		Pristine: {SitLatchReleased, SitParentFailureCascade, SitCascadeDeep, SitParentTerminalAtInsert,
			SitAnyTerminalAfterFailure, SitParentRequeued, SitWaitingCancelled},
		Recoverable: {SitLatchReleased, SitParentOutcomeFenced, SitParentOutcomeUnknown, SitParentLeaseLost},
		Adversarial: {SitLatchReleased, SitParentLeaseLost},
	}
	for _, level := range Levels {
		t.Run(level.String(), func(t *testing.T) {
			t.Parallel()
			var cov Coverage
			for seed := uint64(1); seed <= 2*batterySeeds(); seed++ {
				rep, err := Run(NewPlan(seed, level, Size{}))
				if err != nil {
					data, _ := rep.Plan.Encode()
					t.Fatalf("seed %d: %v\nplan:\n%s", seed, err, data)
				}
				if level.LivenessChecked() && !rep.Drained {
					t.Fatalf("seed %d: not drained", seed)
				}
				cov.Merge(&rep.Coverage)
			}
			for _, s := range want[level] {
				if !cov.Hit(s) {
					t.Errorf("%s: Situation %s never reached in %d runs", level, s, cov.Runs)
				}
			}
			for i, e := range core.Edges {
				if e.From == job.StateAwaitingParent || e.To == job.StateAwaitingParent {
					if cov.Edges[i] == 0 {
						t.Errorf("%s: edge %s never reached", level, e)
					}
				}
			}
		})
	}
}

// TestPlantedLatchBugsAreFound: the Dependency oracles catch a latch that
// counts a requeued parent twice, a cascade that stops after one level and
// a Workflow Retry that releases a dependent early,
// the minimized Plan replays to the same invariant, and passes without the
// planted bug.
func TestPlantedLatchBugsAreFound(t *testing.T) {
	if !plant.Enabled {
		t.Skip("planted bugs are compiled in only with -tags backwave_plant")
	}
	t.Parallel()
	// Requeues of failed parents, which a recount needs, are rare in the
	// drawn workloads; these runs ask for more.
	moreRequeues := func(sc *Scenario) {
		if sc.Work.Graphs.Graphs > 0 {
			sc.Work.Graphs.RequeueProb = 0.6
			sc.Work.Graphs.AnyTerminalProb = 0.6
		}
	}
	for _, tc := range []struct {
		mutation  plant.Bug
		invariant string
		maxSeeds  uint64
		tune      func(*Scenario)
	}{
		{plant.LatchRecountsEdges, InvLatchExactlyOnce, 300, moreRequeues},
		{plant.CascadeStopsEarly, InvDependencySettled, 100, nil},
		// A Workflow Retry that recounts latches against the parents'
		// states before the retry releases a retried dependent at once,
		// before its retried parent has run again.
		{plant.RetryReleasesEarly, InvRetryEarly, 200, nil},
	} {
		t.Run(string(tc.mutation), func(t *testing.T) {
			t.Parallel()
			var found *Failure
			var plan Plan
			for seed := uint64(1); seed <= tc.maxSeeds && found == nil; seed++ {
				p := NewPlan(seed, Recoverable, Size{})
				p.Scenario.Mutation = tc.mutation
				if tc.tune != nil {
					tc.tune(&p.Scenario)
				}
				rep, err := Run(p)
				if err != nil && !errors.As(err, &found) {
					t.Fatalf("seed %d: %v", seed, err)
				}
				plan = rep.Plan
			}
			if found == nil {
				t.Fatalf("not found in %d seeds", tc.maxSeeds)
			}
			if found.Invariant != tc.invariant {
				t.Fatalf("tripped %q, want %q: %v", found.Invariant, tc.invariant, found)
			}
			t.Logf("found: %v", found)
			min, err := Minimize(plan, found, MinimizeOptions{MaxRuns: 200})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Run(min.Plan); !errors.As(err, new(*Failure)) {
				t.Fatalf("minimized plan replays to %v", err)
			}
			min.Plan.Scenario.Mutation = plant.None
			if _, err := Run(min.Plan); err != nil {
				t.Fatalf("minimized plan fails without the planted bug: %v", err)
			}
		})
	}
}

// targeted names the Plans under testdata/ that aim a fault at a parent's
// outcome, and the Situation each must reach.
var targeted = []struct {
	file string
	sit  Situation
	// keep keeps the fault kinds the Plan may use.
	keep func(m *FaultMap) FaultMap
}{
	// A node isolated while it runs a parent heals into a stale write: its
	// late outcome of the parent is fenced out, and the parent's latch
	// edges, counted by the node that took the job over, are not counted
	// again.
	{"parent-outcome-isolated--ok.json", SitParentOutcomeFenced, func(m *FaultMap) FaultMap {
		return FaultMap{Isolations: m.Isolations}
	}},
	// A node crashes while it holds a parent's Lease: the Lease lapses, an
	// expiry sweep ends it (dead-lettering at the ceiling or retrying), and
	// the latch counts the parent once, when it finally ends.
	{"parent-crash--ok.json", SitParentLeaseLost, func(m *FaultMap) FaultMap {
		return FaultMap{Crashes: m.Crashes}
	}},
	// A parent's outcome report applies but its node is told it failed, so
	// the Driver reports it again and the repeat is fenced out.
	{"parent-outcome-unknown--ok.json", SitParentOutcomeUnknown, func(m *FaultMap) FaultMap {
		return FaultMap{Ops: m.Ops}
	}},
}

// TestTargetedParentPlans replays the checked-in Plans that aim a crash, an
// isolation or an unknown store outcome at a parent's outcome: each passes
// every oracle — among them latch-exactly-once, which holds the store's
// count of every edge to the model's after every store call — still reaches
// its Situation, and releases or cancels a dependent. With -update-plans it
// searches seeds for such runs and writes them, shrunk to the fewest faults
// of their kind that still reach the Situation.
func TestTargetedParentPlans(t *testing.T) {
	t.Parallel()
	for _, tc := range targeted {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", tc.file)
			if *updatePlans {
				p, ok := targetPlan(t, tc.sit, tc.keep)
				if !ok {
					t.Fatalf("no seed reaches %s", tc.sit)
				}
				data, err := p.Encode()
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-plans to write it)", err)
			}
			p, err := DecodePlan(data)
			if err != nil {
				t.Fatal(err)
			}
			if p.Faults.Len() == 0 {
				t.Fatal("the plan injects no fault")
			}
			rep, err := Run(p)
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if !rep.Coverage.Hit(tc.sit) {
				t.Fatalf("the plan no longer reaches %s", tc.sit)
			}
			if !rep.Coverage.Hit(SitLatchReleased) && !rep.Coverage.Hit(SitParentFailureCascade) {
				t.Fatal("the plan settles no latch")
			}
		})
	}
}

// targetPlan finds a passing Recoverable run that reaches sit using only the
// fault kinds keep leaves, and removes faults one at a time while the run
// still passes and reaches sit.
func targetPlan(t *testing.T, sit Situation, keep func(*FaultMap) FaultMap) (Plan, bool) {
	t.Helper()
	reaches := func(p Plan) bool {
		rep, err := Run(p)
		return err == nil && rep.Coverage.Hit(sit)
	}
	for seed := uint64(1); seed <= 2000; seed++ {
		rep, err := Run(NewPlan(seed, Recoverable, Size{Jobs: 20}))
		if err != nil || !rep.Coverage.Hit(sit) {
			continue
		}
		p := withFaults(rep.Plan, keep(&rep.Plan.Faults))
		if !reaches(p) {
			continue
		}
		for i := 0; i < p.Faults.Len(); {
			cand := withFaults(p, p.Faults.Keep(func(j int) bool { return j != i }))
			if cand.Faults.Len() > 0 && reaches(cand) {
				p = cand
				continue
			}
			i++
		}
		t.Logf("seed %d: %s reached with %s", seed, sit, p.Faults.Summary())
		return p, true
	}
	return Plan{}, false
}
