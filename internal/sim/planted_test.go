package sim

import (
	"errors"
	"github.com/backwave/backwave/internal/plant"
	"os"
	"path/filepath"
	"testing"
)

// The oracle self-tests: each plants a known bug behind a test-only switch
// and shows the VOPR loop finds it within a bounded number of seeds, the Seed
// Minimizer shrinks its Plan, and the minimized Plan replays to the same
// invariant (glossary: VOPR Runner, Seed Minimizer, Effect-Once, Concurrency
// Limit, Backpressure; the Rate Limit of the store package doc).
func TestPlantedBugsAreFound(t *testing.T) {
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
		{plant.FenceIgnoresAttempt, Recoverable, InvEffectOnce, 1000},
		{plant.ClaimIgnoresLimit, Pristine, InvConcurrencyLimit, 50},
		{plant.ClaimIgnoresRate, Pristine, InvRateLimit, 50},
		{plant.ClaimIgnoresKeyLimit, Pristine, InvKeyLimit, 200},
		{plant.ClaimIgnoresKeyRate, Pristine, InvKeyRate, 200},
		{plant.ClaimIgnoresKeyOrder, Pristine, InvFairStart, 300},
		{plant.CapacityForgetsBuffered, Pristine, InvPoolSize, 50},
		{plant.ObserverAdvancesFirst, Pristine, InvObserverDeliveryLiveness, 200},
		{plant.FleetSkipsNothing, Pristine, InvFleetQuarantine, 200},
		{plant.WindowRefusesNewer, Pristine, InvMigrationLiveness, 200},
		{plant.CursorIgnoresFence, Recoverable, InvCursorFenced, 200},
		{plant.SnoozeCharged, Pristine, InvSnoozeUncharged, 50},
		{plant.SnoozeIgnoresCap, Pristine, InvSnoozeCap, 50},
		{plant.BatchDealsShifted, Pristine, InvBatchOwnResult, 50},
	} {
		t.Run(string(tc.mutation), func(t *testing.T) {
			t.Parallel()
			var (
				found *Failure
				plan  Plan
				seeds uint64
			)
			for seed := uint64(1); seed <= tc.maxSeeds && found == nil; seed++ {
				seeds = seed
				p := NewPlan(seed, tc.level, Size{})
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
			t.Logf("found after %d seeds (seed %d): %v", seeds, seeds, found)

			min, err := Minimize(plan, found, MinimizeOptions{MaxRuns: 400})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("minimized %d faults to %d in %d replays", min.Before, min.After, min.Runs)
			if min.After > min.Before {
				t.Fatalf("minimizing grew the Fault Map: %d → %d", min.Before, min.After)
			}
			data, err := min.Plan.Encode()
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodePlan(data)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Run(back)
			var again *Failure
			if !errors.As(err, &again) || !again.Same(found) {
				t.Fatalf("minimized plan replays to %v, want %q", err, found.Invariant)
			}
			// Without the planted bug, the same Plan passes.
			back.Scenario.Mutation = plant.None
			if _, err := Run(back); err != nil {
				t.Fatalf("minimized plan fails without the planted bug: %v", err)
			}
			// A checked-in Plan for this bug (TestPlansInTestdata replays it)
			// is rewritten from this run with -update-plans, for when the
			// Simulator's draws change and the old Plan no longer trips.
			file := filepath.Join("testdata", "planted-"+string(tc.mutation)+"--"+tc.invariant+".json")
			if _, err := os.Stat(file); err == nil && *updatePlans {
				if err := os.WriteFile(file, data, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("rewrote %s", file)
			}
		})
	}
}
