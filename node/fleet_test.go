package node

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// fleetDriver is a Driver taking part in the fleet registry, handling
// "old.job" only.
func fleetDriver(t *testing.T) *Driver {
	t.Helper()
	d, err := New(Config{Worker: "w", Policy: Strict("q"), WireNames: []string{"old.job"}, MaintenanceInterval: time.Second, HandlerGrace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// only returns the single command of type T in cmds, failing otherwise.
func only[T Command](t *testing.T, cmds []Command) T {
	t.Helper()
	var found []T
	for _, c := range cmds {
		if x, ok := c.(T); ok {
			found = append(found, x)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %T in %v", *new(T), cmds)
	}
	return found[0]
}

func none[T Command](t *testing.T, cmds []Command) {
	t.Helper()
	for _, c := range cmds {
		if _, ok := c.(T); ok {
			t.Fatalf("want no %T in %v", c, cmds)
		}
	}
}

// The fleet registry (fleet.go): a fresh Driver's first claim waits for its
// first registry read; the read's judgment (core.FleetSkip) goes on every
// claim; a failed read before the first success claims nothing, one after
// it keeps the last judgment.
func TestFleetFirstClaimWaitsForTheRegistry(t *testing.T) {
	t.Parallel()
	d := fleetDriver(t)
	t0 := time.Unix(1000, 0)
	out := d.Step(Poll{Now: t0}, nil)
	none[Claim](t, out)
	stamp := only[StampFleet](t, out)
	expired := func(out []Command) {
		d.Step(ExpireDone{Now: t0, Op: only[ExpireLeases](t, out).Op}, nil)
	}
	expired(out)
	if !slices.Equal(stamp.WireNames, []string{"old.job"}) || stamp.Forget != 20*time.Second {
		t.Fatalf("stamp %v, want old.job with a forget horizon of two graces", stamp)
	}
	// A failed first read: still no claim; the next Poll reads again.
	out = d.Step(FleetStamped{Now: t0, Op: stamp.Op, Err: errors.New("down")}, nil)
	none[Claim](t, out)
	out = d.Step(Poll{Now: t0.Add(100 * time.Millisecond)}, nil)
	none[Claim](t, out)
	stamp = only[StampFleet](t, out)

	// The read shows another live Pump handling new.job: the claim the read
	// releases skips it.
	rows := []core.HandlerStamp{
		{Worker: "other", WireName: "new.job", StampedAt: t0},
		{Worker: "other", WireName: "old.job", StampedAt: t0},
		{Worker: "w", WireName: "old.job", StampedAt: t0},
		{Worker: "gone", WireName: "dead.job", StampedAt: t0.Add(-time.Hour)},
	}
	out = d.Step(FleetStamped{Now: t0, Op: stamp.Op, StoreNow: t0, Handlers: rows}, nil)
	claim := only[Claim](t, out)
	if !slices.Equal(claim.Skip, []string{"new.job"}) {
		t.Fatalf("claim skips %q, want [new.job]", claim.Skip)
	}
	out = d.Step(ClaimDone{Now: t0, Op: claim.Op}, nil)
	none[Claim](t, out)

	// The next beat's read fails: the claims keep skipping new.job.
	out = d.Step(Poll{Now: t0.Add(2 * time.Second)}, nil)
	claim = only[Claim](t, out)
	stamp = only[StampFleet](t, out)
	expired(out)
	d.Step(FleetStamped{Now: t0, Op: stamp.Op, Err: errors.New("down")}, nil)
	d.Step(ClaimDone{Now: t0, Op: claim.Op}, nil)
	if got := d.Skipping(); !slices.Equal(got, []string{"new.job"}) {
		t.Fatalf("after a failed read the Driver skips %q, want the last judgment [new.job]", got)
	}

	// A read past the grace of new.job's last stamp: nothing is skipped.
	out = d.Step(Poll{Now: t0.Add(4 * time.Second)}, nil)
	claim = only[Claim](t, out)
	stamp = only[StampFleet](t, out)
	expired(out)
	later := t0.Add(11 * time.Second)
	d.Step(FleetStamped{Now: later, Op: stamp.Op, StoreNow: later, Handlers: rows}, nil)
	d.Step(ClaimDone{Now: later, Op: claim.Op, Jobs: []job.Job{}}, nil)
	if got := d.Skipping(); got != nil {
		t.Fatalf("with new.job's handler stamped 11 s ago (grace 10 s) the Driver skips %q, want nothing", got)
	}
}

// Config: HandlerGrace must exceed MaintenanceInterval, and WireNames be
// valid and distinct.
func TestFleetConfig(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]Config{
		"grace at maintenance": {Worker: "w", Policy: Strict("q"), WireNames: []string{"a"}, MaintenanceInterval: time.Second, HandlerGrace: time.Second},
		"empty name":           {Worker: "w", Policy: Strict("q"), WireNames: []string{""}},
		"twice":                {Worker: "w", Policy: Strict("q"), WireNames: []string{"a", "a"}},
	} {
		if _, err := New(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", name, err)
		}
	}
	d, err := New(Config{Worker: "w", Policy: Strict("q"), MaintenanceInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if g := d.Config().HandlerGrace; g != 3*time.Minute {
		t.Errorf("default HandlerGrace with a one-minute beat = %v, want three beats", g)
	}
	// Without WireNames the Driver claims at once and never stamps.
	out := d.Step(Poll{Now: time.Unix(0, 0)}, nil)
	only[Claim](t, out)
	none[StampFleet](t, out)
}
