package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/internal/invariants"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// stray is an op no machine here ever issued.
const stray node.OpID = 1 << 30

// TestStrayRepliesAreLoud feeds every machine a store command's result for
// an operation it does not have in flight — the misuse the Machine contract
// calls a broken invariant. A build that checks invariants (-race, or the
// tag backwave_invariants) must panic at each; any other build drops it and
// goes on. Run under -race, the test proves each check bites.
func TestStrayRepliesAreLoud(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	newDriver := func(t *testing.T) node.Machine {
		d, err := node.New(node.Config{
			Worker: "w1", Policy: node.Strict("q"), Schedules: true, WireNames: []string{"wire"},
			Retention: &node.RetentionPolicy{KeepSucceeded: time.Hour, KeepDeadLettered: time.Hour},
		})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	newWalker := func(t *testing.T) node.Machine {
		w, err := node.NewWalker(node.WalkerConfig{Observer: "chat", States: []job.State{job.StateSucceeded}})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, tc := range []struct {
		name    string
		machine func(*testing.T) node.Machine
		ev      node.Event
	}{
		{"driver ClaimDone", newDriver, node.ClaimDone{Now: t0, Op: stray}},
		{"driver RenewDone", newDriver, node.RenewDone{Now: t0, Op: stray}},
		{"driver ReportDone", newDriver, node.ReportDone{Now: t0, Op: stray}},
		{"driver ExpireDone", newDriver, node.ExpireDone{Now: t0, Op: stray}},
		{"driver SchedulesLoaded", newDriver, node.SchedulesLoaded{Now: t0, Op: stray}},
		{"driver MintDone", newDriver, node.MintDone{Now: t0, Op: stray}},
		{"driver PurgeDone", newDriver, node.PurgeDone{Now: t0, Op: stray}},
		{"driver FleetStamped", newDriver, node.FleetStamped{Now: t0, Op: stray}},
		{"walker WalkClaimDone", newWalker, node.WalkClaimDone{Now: t0, Op: stray}},
		{"walker WalkAdvanceDone", newWalker, node.WalkAdvanceDone{Now: t0, Op: stray}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := tc.machine(t)
			got := recovered(func() { m.Step(tc.ev, nil) })
			switch {
			case invariants.Enabled && !strings.Contains(got, "broken invariant") && !strings.Contains(got, "not in flight"):
				t.Fatalf("Step(%T for op %d not in flight) = %q, want a broken-invariant panic", tc.ev, stray, got)
			case !invariants.Enabled && got != "":
				t.Fatalf("Step(%T for op %d not in flight) panicked %q in a build without invariants, want it dropped", tc.ev, stray, got)
			}
		})
	}
}

// TestWalkerPanicsOnUnknownEvent: a Walker fed a Driver's event panics, in
// every build, as the Driver does on an event it does not know.
func TestWalkerPanicsOnUnknownEvent(t *testing.T) {
	t.Parallel()
	w, err := node.NewWalker(node.WalkerConfig{Observer: "chat", States: []job.State{job.StateSucceeded}})
	if err != nil {
		t.Fatal(err)
	}
	if got := recovered(func() { w.Step(node.Poll{Now: time.Now()}, nil) }); !strings.Contains(got, "unknown event node.Poll") {
		t.Fatalf("Walker.Step(Poll) = %q, want a panic naming the event", got)
	}
}

// recovered runs f and returns what it panicked with, as text ("" if it
// did not).
func recovered(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
			if msg == "" {
				msg = "panic"
			}
		}
	}()
	f()
	return ""
}
