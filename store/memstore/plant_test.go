//go:build backwave_plant

package memstore_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/storetest"
	"github.com/backwave/backwave/vtime"
)

// plantEnv names the bug TestConformancePlanted plants; unset, it skips.
const plantEnv = "BACKWAVE_TEST_PLANT"

// TestConformancePlanted runs the Conformance Suite on a store with the
// bug $BACKWAVE_TEST_PLANT planted: it must fail.
func TestConformancePlanted(t *testing.T) {
	bug := plant.Bug(os.Getenv(plantEnv))
	if bug == plant.None {
		t.Skip(plantEnv + " names no planted bug")
	}
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := vtime.NewManual(start)
		var o memstore.Options
		o.Clock = clock
		o.SetPlant(bug)
		return storetest.Harness{Store: memstore.New(o), Now: clock.Now, Advance: func(d time.Duration) { clock.Advance(d) },
			WithHistory: func(p store.HistoryPolicy) store.Store {
				return memstore.New(memstore.Options{Clock: clock, History: p})
			}}
	})
}

// TestPlantedReplaceIsCaught: with plant.ReplaceRewritesRunning planted,
// the Conformance Suite's Replace/NotPendingHolderRefuses fails, and it
// passes without it (TestConformance).
func TestPlantedReplaceIsCaught(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestConformancePlanted$/^Replace$")
	cmd.Env = append(os.Environ(), plantEnv+"="+string(plant.ReplaceRewritesRunning))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed with %s planted:\n%s", plant.ReplaceRewritesRunning, out)
	}
	if !strings.Contains(string(out), "--- FAIL: TestConformancePlanted/Replace/NotPendingHolderRefuses") ||
		!strings.Contains(string(out), "holder not pending") {
		t.Fatalf("the suite failed otherwise than by Replace/NotPendingHolderRefuses:\n%s", out)
	}
}
