package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// Fleet is the fleet registry: which Wire Names the fleet's Pumps handle,
// each row stamped with the store's clock. Pumps stamp their Wire Names on
// the Driver's maintenance beat and read everyone's on the same beat, so a
// node of a Mixed-Version Fleet learns which Wire Names some other live node
// can run and it cannot (core.FleetSkip), and its claims leave those jobs
// alone (ClaimParams.Skip) instead of Quarantining them.
//
// The registry holds no judgment: it stores stamps and answers them. What
// counts as live, and what to skip, is core's.
type Fleet interface {
	// FleetStamp, in one atomic step: records that p.Worker handles
	// exactly p.WireNames, each stamped with the store's now (a Wire Name
	// the Worker stamped before and no longer lists loses its row);
	// removes every row, of any Worker, stamped before now − p.Forget;
	// and returns the registry as it then stands, with that now. Rows are
	// returned ordered by Wire Name, then Worker.
	FleetStamp(ctx context.Context, p FleetStampParams) (FleetView, error)
}

// FleetStampParams are the params of Fleet.FleetStamp.
type FleetStampParams struct {
	// Worker is the Pump's lease-holder id. Required.
	Worker job.WorkerID
	// WireNames are the Wire Names the Pump handles: valid names,
	// distinct, at most MaxFleetWireNames. None is allowed (the Pump's
	// rows are removed).
	WireNames []string
	// Forget is how old a row may grow, on the store's clock, before any
	// stamp removes it; positive. It bounds the registry's size as Pumps
	// come and go under new ids.
	Forget time.Duration
}

// MaxFleetWireNames bounds the Wire Names one stamp may list.
const MaxFleetWireNames = 10000

// FleetView is what FleetStamp answers: the registry's rows and the store's
// now they were read at.
type FleetView struct {
	Now      time.Time
	Handlers []core.HandlerStamp
}

// Validate checks the params of FleetStamp.
func (p FleetStampParams) Validate() error {
	switch {
	case p.Worker == "":
		return fmt.Errorf("%w: fleet stamp without a worker id", ErrInvalidParams)
	case p.Forget <= 0:
		return fmt.Errorf("%w: fleet stamp forget horizon %v (want > 0)", ErrInvalidParams, p.Forget)
	case len(p.WireNames) > MaxFleetWireNames:
		return fmt.Errorf("%w: fleet stamp lists %d wire names (at most %d)", ErrInvalidParams, len(p.WireNames), MaxFleetWireNames)
	}
	for i, name := range p.WireNames {
		if err := ValidateName("wire name", name); err != nil {
			return err
		}
		if slices.Contains(p.WireNames[:i], name) {
			return fmt.Errorf("%w: fleet stamp lists wire name %q twice", ErrInvalidParams, name)
		}
	}
	return nil
}

// validateSkip checks ClaimParams.Skip: valid Wire Names.
func validateSkip(skip []string) error {
	for _, name := range skip {
		if err := ValidateName("skipped wire name", name); err != nil {
			return err
		}
	}
	return nil
}
