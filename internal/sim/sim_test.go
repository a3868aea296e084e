package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
)

// batterySeeds is how many seeds per Fault Level the fixed battery runs.
func batterySeeds() uint64 {
	if testing.Short() {
		return 15
	}
	return 60
}

// batteryLeg is one part of the fixed battery: the Plan it runs for each
// seed, and the headline Situations it must reach over its seeds.
type batteryLeg struct {
	name   string
	plan   func(seed uint64) Plan
	floors []Situation
}

// healRaceSwarm exercises Node Isolation alone, with windows near the top of
// the Swarm's range (drawFault: 0.01–0.3 episodes per node per second, 100ms
// to 6s windows), so that a window often outlasts a Lease and the job is
// leased again before the node heals. The battery's chaos seeds reach the
// heal-into-stale-write race in only two or three seeds in sixty; this leg
// reaches it in about one seed in three, so its floor trips on a broken
// fence or mark rather than on an unlucky draw.
var healRaceSwarm = Swarm{Shape: "single:isolation", Isolation: Fault{Probability: 0.2, Stability: Dur(4 * time.Second)}}

// batteryLegs: one leg per Fault Level, plus a Recoverable leg tuned for the
// heal-into-stale-write race. Pristine injects no faults, so no Lease lapses
// and no outcome goes stale there: its floors are the fault-free headlines.
var batteryLegs = []batteryLeg{
	{
		name:   Pristine.String(),
		plan:   func(seed uint64) Plan { return NewPlan(seed, Pristine, Size{}) },
		floors: []Situation{SitLimitSaturated, SitBackpressureIdle},
	},
	{
		name:   Recoverable.String(),
		plan:   func(seed uint64) Plan { return NewPlan(seed, Recoverable, Size{}) },
		floors: []Situation{SitStaleOutcomeFenced, SitLeaseExpiredRetry, SitLimitSaturated, SitBackpressureIdle, SitOccurrencesAfterChaos},
	},
	{
		name:   Adversarial.String(),
		plan:   func(seed uint64) Plan { return NewPlan(seed, Adversarial, Size{}) },
		floors: []Situation{SitStaleOutcomeFenced, SitLeaseExpiredRetry, SitLimitSaturated, SitBackpressureIdle},
	},
	{
		name: "recoverable-heal-race",
		plan: func(seed uint64) Plan {
			p := NewPlan(seed, Recoverable, Size{})
			p.Scenario.Swarm = healRaceSwarm
			return p
		},
		floors: []Situation{SitIsolationHealedStaleWrite, SitStaleOutcomeFenced, SitIsolationHealed},
	},
}

// TestBattery is the fixed seed battery CI runs: every seed must pass every
// oracle of its Fault Level, and each leg must reach its headline
// Situations — a floor under the Coverage report, so that a change which
// quietly stops the battery reaching a stale outcome fenced, a healed node's
// stale write, a lapsed Lease's job re-run, a saturated Concurrency Limit or
// Backpressure fails here (glossary: Simulator, Fault Level, Coverage,
// Situation).
func TestBattery(t *testing.T) {
	t.Parallel()
	for _, leg := range batteryLegs {
		t.Run(leg.name, func(t *testing.T) {
			t.Parallel()
			var cov Coverage
			for seed := uint64(1); seed <= batterySeeds(); seed++ {
				rep, err := Run(leg.plan(seed))
				if err != nil {
					data, _ := rep.Plan.Encode()
					t.Fatalf("seed %d: %v\n%s\nplan:\n%s", seed, err, rep.Plan.Scenario.Swarm, data)
				}
				if rep.Plan.Scenario.Level.LivenessChecked() && !rep.Drained {
					t.Fatalf("seed %d: run ended without draining and without a failure", seed)
				}
				cov.Merge(&rep.Coverage)
			}
			edges, sits, _ := cov.Counts()
			t.Logf("%s: %d seeds, %d edges, %d situations", leg.name, cov.Runs, edges, sits)
			missed := false
			for _, s := range leg.floors {
				if !cov.Hit(s) {
					missed = true
					t.Errorf("%s: headline Situation %s never reached in %d seeds: the battery no longer exercises it", leg.name, s, cov.Runs)
				}
			}
			if missed {
				t.Logf("%s", &cov)
			}
		})
	}
}

// TestSameSeedSameTrace: one 64-bit seed determines a run; the same seed run
// twice gives the same trace hash (glossary: Simulator).
func TestSameSeedSameTrace(t *testing.T) {
	t.Parallel()
	for _, level := range Levels {
		for seed := uint64(100); seed < 106; seed++ {
			a, errA := Run(NewPlan(seed, level, Size{}))
			b, errB := Run(NewPlan(seed, level, Size{}))
			if a.TraceHash != b.TraceHash || a.Events != b.Events || !reflect.DeepEqual(a.Plan, b.Plan) {
				t.Fatalf("%s seed %d: two runs differ: hash %x/%x events %d/%d", level, seed, a.TraceHash, b.TraceHash, a.Events, b.Events)
			}
			if (errA == nil) != (errB == nil) {
				t.Fatalf("%s seed %d: errors differ: %v / %v", level, seed, errA, errB)
			}
		}
	}
}

// TestPlanReplaysExactly: a discovery run's Plan, written to JSON and read
// back, replays with the same trace hash; the Fault Map is consulted at each
// site by stable identity (glossary: Plan).
func TestPlanReplaysExactly(t *testing.T) {
	t.Parallel()
	replayed := 0
	for seed := uint64(200); seed < 230; seed++ {
		level := Levels[seed%3]
		disc, _ := Run(NewPlan(seed, level, Size{}))
		data, err := disc.Plan.Encode()
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodePlan(data)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, data)
		}
		if p.Discover {
			t.Fatalf("seed %d: a Report's Plan must be a replay", seed)
		}
		rep, _ := Run(p)
		if rep.TraceHash != disc.TraceHash {
			t.Fatalf("seed %d (%s, %d faults): replay hash %x, discovery %x", seed, level, p.Faults.Len(), rep.TraceHash, disc.TraceHash)
		}
		if p.Faults.Len() > 0 {
			replayed++
		}
	}
	if replayed < 10 {
		t.Fatalf("only %d of the plans carried faults; the test proves little", replayed)
	}
}

// TestEmptyFaultMapIsCalm: a replay applies no fault on a miss, so a Plan
// with an empty Fault Map runs exactly as its Scenario with the Swarm
// switched off (glossary: Plan).
func TestEmptyFaultMapIsCalm(t *testing.T) {
	t.Parallel()
	for seed := uint64(300); seed < 310; seed++ {
		p := NewPlan(seed, Adversarial, Size{})
		p.Discover = false
		a, _ := Run(p)
		calm := NewPlan(seed, Adversarial, Size{})
		calm.Scenario.Swarm = Swarm{Shape: "calm"}
		b, _ := Run(calm)
		if a.TraceHash != b.TraceHash {
			t.Fatalf("seed %d: empty-map replay %x differs from a calm discovery %x", seed, a.TraceHash, b.TraceHash)
		}
	}
}

// TestSwarmShapes: the Swarm is a pure function of the seed, stays inside the
// level's envelope, prints in full, and calm, single-fault and full-chaos
// configurations all occur (glossary: Swarm).
func TestSwarmShapes(t *testing.T) {
	t.Parallel()
	shapes := map[string]int{}
	for seed := uint64(0); seed < 300; seed++ {
		for _, level := range Levels {
			s := NewSwarm(seed, level)
			if !reflect.DeepEqual(s, NewSwarm(seed, level)) {
				t.Fatalf("seed %d: swarm is not a pure function of the seed", seed)
			}
			switch level {
			case Pristine:
				if len(s.Active()) != 0 {
					t.Fatalf("pristine swarm has faults: %s", s)
				}
			case Recoverable:
				if s.Loss.On() {
					t.Fatalf("recoverable swarm may lose nodes for good: %s", s)
				}
			}
			if level == Adversarial {
				kind, _, _ := strings.Cut(s.Shape, ":")
				shapes[kind]++
			}
			for _, k := range swarmKinds {
				if !strings.Contains(s.String(), k) {
					t.Fatalf("String omits %s: %s", k, s)
				}
			}
		}
	}
	for _, k := range []string{"calm", "single", "chaos"} {
		if shapes[k] < 30 {
			t.Errorf("swarm shape %s occurred %d times in 300 seeds: %v", k, shapes[k], shapes)
		}
	}
}

// TestFaultEnvelopes: Recoverable faults all heal; Adversarial ones may not,
// but always spare a node (glossary: Fault Level).
func TestFaultEnvelopes(t *testing.T) {
	t.Parallel()
	permanent := 0
	for seed := uint64(0); seed < 200; seed++ {
		for _, level := range []Level{Recoverable, Adversarial} {
			sc := NewScenario(seed, level, Size{})
			var m FaultMap
			drawEpisodes(&sc, &m)
			lost := map[int]bool{}
			for _, f := range m.Crashes {
				if f.Permanent {
					lost[f.Node] = true
				}
			}
			for _, f := range m.Isolations {
				if f.Permanent {
					lost[f.Node] = true
				}
			}
			if level == Recoverable && len(lost) > 0 {
				t.Fatalf("seed %d: recoverable run loses nodes %v", seed, lost)
			}
			if len(lost) >= len(sc.Nodes) {
				t.Fatalf("seed %d: every node lost", seed)
			}
			permanent += len(lost)
		}
	}
	if permanent == 0 {
		t.Fatal("no adversarial run lost a node")
	}
}

// TestRunNeverPanics: a broken Plan is an error, not a panic.
func TestRunNeverPanics(t *testing.T) {
	t.Parallel()
	p := NewPlan(1, Recoverable, Size{})
	p.Scenario.Nodes = nil
	if _, err := Run(p); !errors.Is(err, ErrInvalidPlan) {
		t.Fatalf("got %v, want ErrInvalidPlan", err)
	}
	p = NewPlan(1, Recoverable, Size{})
	p.Discover = false
	p.Faults.Crashes = []CrashFault{{Node: 99, At: Dur(1)}}
	p.Faults.Isolations = []IsolationFault{{Node: -3, At: Dur(1)}}
	if _, err := Run(p); err != nil {
		t.Fatalf("faults on unknown nodes should be ignored: %v", err)
	}
}

// TestDrainLivenessBites: a Plan whose every node is lost for good cannot
// drain, so under a level that demands Drain-Liveness it must trip it —
// within the derived bound, not by running forever (glossary: Fault Level).
func TestDrainLivenessBites(t *testing.T) {
	t.Parallel()
	p := NewPlan(11, Recoverable, Size{Nodes: 2, Jobs: 40})
	p.Discover = false
	for n := range p.Scenario.Nodes {
		p.Faults.Crashes = append(p.Faults.Crashes, CrashFault{Node: n, At: 0, Permanent: true})
	}
	rep, err := Run(p)
	var f *Failure
	if !errors.As(err, &f) || f.Invariant != InvDrainLiveness || f.Class != ClassLiveness {
		t.Fatalf("got %v, want a drain-liveness failure", err)
	}
	if rep.Bound <= 0 || rep.Virtual > p.Scenario.Chaos.D()+rep.Tail+rep.Bound+p.Scenario.Work.FutureMax.D() {
		t.Fatalf("bound %v after a schedule tail of %v, run lasted %v", rep.Bound, rep.Tail, rep.Virtual)
	}
	// The same Plan under Adversarial checks safety only.
	p.Scenario.Level = Adversarial
	if _, err := Run(p); err != nil {
		t.Fatalf("adversarial: %v", err)
	}
}

// TestMutateStaysInEnvelope: the Coverage-Guided Swarm mutates fault
// configuration and Fault Maps only — never the workload — and never takes a
// Recoverable Plan outside its envelope (glossary: Coverage-Guided Swarm).
func TestMutateStaysInEnvelope(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	p := NewPlan(42, Recoverable, Size{})
	rep, _ := Run(p)
	cur := rep.Plan
	for i := range 300 {
		next := Mutate(cur, r)
		if !reflect.DeepEqual(next.Scenario.Work, p.Scenario.Work) || !reflect.DeepEqual(next.Scenario.Nodes, p.Scenario.Nodes) ||
			next.Scenario.Handler != p.Scenario.Handler || next.Scenario.Seed != p.Scenario.Seed {
			t.Fatalf("step %d: mutation touched the workload", i)
		}
		if next.Scenario.Swarm.Loss.On() {
			t.Fatalf("step %d: Recoverable swarm gained permanent loss", i)
		}
		rep, err := Run(next)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for _, f := range rep.Plan.Faults.Crashes {
			if f.Permanent {
				t.Fatalf("step %d: permanent crash in a Recoverable plan", i)
			}
		}
		for _, f := range rep.Plan.Faults.Isolations {
			if f.Permanent {
				t.Fatalf("step %d: permanent isolation in a Recoverable plan", i)
			}
		}
		cur = rep.Plan
	}
}

// TestCoverageReport lists every legal edge and every Situation, hit or
// never hit (glossary: Coverage).
func TestCoverageReport(t *testing.T) {
	t.Parallel()
	var c Coverage
	for seed := uint64(1); seed <= 5; seed++ {
		rep, _ := Run(NewPlan(seed, Recoverable, Size{}))
		c.Merge(&rep.Coverage)
	}
	s := c.String()
	for _, e := range core.Edges {
		if !strings.Contains(s, fmt.Sprintf("-%s-> %s", e.Via, e.To)) {
			t.Errorf("report lacks edge %s", e)
		}
	}
	for sit := range numSituations {
		if !strings.Contains(s, sit.String()) {
			t.Errorf("report lacks situation %s", sit)
		}
	}
	if !strings.Contains(s, "NEVER") || !strings.Contains(s, "hit ") || c.Runs != 5 {
		t.Errorf("report:\n%s", s)
	}
}
