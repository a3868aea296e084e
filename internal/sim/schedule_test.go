package sim

import (
	"errors"
	"github.com/backwave/backwave/internal/plant"
	"testing"
)

// TestPlantedScheduleBugsAreFound plants a bug in minting behind a
// test-only switch and shows the schedule oracles find it within a bounded
// number of seeds, and that the same Plan passes without it (issue 7: no
// occurrence minted twice; under Pristine every due occurrence minted or
// skipped by No-Overlap, and under Recoverable every one due after the
// faults ceased dealt with; Coalesce never more than one make-up job per
// outage).
func TestPlantedScheduleBugsAreFound(t *testing.T) {
	if !plant.Enabled {
		t.Skip("planted bugs are compiled in only with -tags backwave_plant")
	}
	t.Parallel()
	for _, tc := range []struct {
		mutation  plant.Bug
		level     Level
		invariant string
		maxSeeds  uint64
	}{
		{plant.MintIgnoresFence, Recoverable, InvOccurrenceTwice, 2000},
		{plant.CoalesceEveryMissed, Recoverable, InvMakeUpPerOutage, 2000},
		{plant.MintDropsOccurrence, Pristine, InvOccurrenceNotMinted, 200},
		{plant.MintDropsOccurrence, Recoverable, InvOccurrenceNotMinted, 400},
	} {
		t.Run(string(tc.mutation)+"/"+tc.level.String(), func(t *testing.T) {
			t.Parallel()
			var (
				found *Failure
				plan  Plan
				seeds uint64
			)
			for seed := uint64(1); seed <= tc.maxSeeds && found == nil; seed++ {
				seeds = seed
				p := NewPlan(seed, tc.level, Size{})
				if !mayTrip(&p.Scenario, tc.mutation) {
					continue
				}
				p.Scenario.Mutation = tc.mutation
				rep, err := Run(p)
				if err == nil {
					continue
				}
				if !errors.As(err, &found) {
					t.Fatalf("seed %d: %v is not a *Failure", seed, err)
				}
				plan = rep.Plan
			}
			if found == nil {
				t.Fatalf("not found in %d seeds", tc.maxSeeds)
			}
			if found.Invariant != tc.invariant {
				t.Fatalf("seed %d tripped %q, want %q: %v", seeds, found.Invariant, tc.invariant, found)
			}
			t.Logf("found after %d seeds: %v", seeds, found)
			plan.Scenario.Mutation = plant.None
			if _, err := Run(plan); err != nil {
				t.Fatalf("the plan fails without the planted bug: %v", err)
			}
		})
	}
}

// mayTrip reports whether the planted bug can show in the Scenario at all:
// it has schedules, and for the Coalesce bug a Coalesce schedule whose
// MissedAfter is tight enough to miss occurrences.
func mayTrip(sc *Scenario, m plant.Bug) bool {
	if len(sc.Schedules) == 0 {
		return false
	}
	if m != plant.CoalesceEveryMissed {
		return true
	}
	var maint Dur
	for _, ns := range sc.Nodes {
		maint = max(maint, ns.Maintenance)
	}
	for _, s := range sc.Schedules {
		if s.CatchUp == "coalesce" && sc.MissedAfter < 2*maint {
			return true
		}
	}
	return false
}
