package node

import (
	"slices"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/store"
)

// The fleet registry (store.Fleet, core.FleetSkip). A Driver whose Config
// lists the Wire Names its Shell handles (Config.WireNames) stamps them in
// the store on the maintenance beat, reads everyone's stamps in the same
// call, and from then on passes the Wire Names core.FleetSkip names to
// every claim (Claim.Skip): jobs some other live node can run and this one
// cannot stay Scheduled for that node, instead of being Quarantined here.
//
// Order of a start: a fresh Driver has not read the registry yet, and a
// claim before the read could Quarantine a job another node of the fleet
// runs. So its first claim pass waits for the first StampFleet's answer
// (the one the first Poll issues, as its maintenance beat is due). A failed
// stamp is issued again at the next Poll, and until one succeeds the Driver
// claims nothing; after that a failed stamp keeps the last skip list, so a
// store that refuses only the registry does not stop the node.
//
// What it costs: one store call per maintenance beat per Pump, and nothing
// per claim when every live Pump handles the same Wire Names (Skip is empty
// and the store runs the claim it always ran).

// fleetState is the Driver's view of the fleet registry.
type fleetState struct {
	// op is the StampFleet in flight (0: none).
	op OpID
	// known is set once a stamp succeeded; skip is the judgment of the
	// latest one.
	known bool
	skip  []string
	// waiting marks a claim pass held back until the first read.
	waiting bool
}

// fleetOn reports whether the Driver takes part in the fleet registry.
func (d *Driver) fleetOn() bool { return d.cfg.WireNames != nil }

// fleetHold reports whether a claim pass must wait for the registry's first
// read, issuing the read if none is in flight.
func (d *Driver) fleetHold(out []Command) ([]Command, bool) {
	if !d.fleetOn() || d.fleet.known {
		return out, false
	}
	d.fleet.waiting = true
	return d.stampFleet(out), true
}

// stampFleet issues a StampFleet unless one is in flight.
func (d *Driver) stampFleet(out []Command) []Command {
	if !d.fleetOn() || d.fleet.op != 0 {
		return out
	}
	d.fleet.op = d.op()
	return append(out, StampFleet{Op: d.fleet.op, WireNames: d.cfg.WireNames, Forget: 2 * d.cfg.HandlerGrace})
}

func (d *Driver) fleetStamped(e FleetStamped, out []Command) []Command {
	if e.Op != d.fleet.op || e.Op == 0 {
		stray("FleetStamped", e.Op)
		return out
	}
	d.fleet.op = 0
	if e.Err != nil {
		return out // the next Poll issues it again while it is needed
	}
	d.fleet.skip = core.FleetSkip(e.Handlers, d.cfg.WireNames, e.StoreNow, d.cfg.HandlerGrace)
	if d.planted(plant.FleetSkipsNothing) {
		d.fleet.skip = nil
	}
	d.fleet.known = true
	if d.fleet.waiting {
		d.fleet.waiting = false
		out = d.requestPass(out)
	}
	return out
}

// Skipping returns the Wire Names the Driver's claims skip now, sorted: the
// judgment of its latest registry read (nil without a registry).
func (d *Driver) Skipping() []string { return slices.Clone(d.fleet.skip) }

// validateWireNames checks Config.WireNames: valid, distinct names.
func validateWireNames(names []string) error {
	for i, name := range names {
		if err := store.ValidateName("wire name", name); err != nil {
			return invalid("WireNames: %w", err)
		}
		if slices.Contains(names[:i], name) {
			return invalid("WireNames lists %q twice", name)
		}
	}
	return nil
}
