package sim

import (
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/core/cron"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/node"
)

// The planted bugs that live in the Simulator: edits of a StoreCommand at
// the one hook point (checked.go), before the oracles see it, standing for
// a Driver that emitted the edited Command. They are compiled in only with
// the tag backwave_plant (plant.Enabled), and the oracles' self-tests
// (schedule_test.go) prove each is caught.
//
//   - plant.CoalesceEveryMissed: a Coalesce mint plan makes up every missed
//     occurrence instead of exactly one — each occurrence after the
//     schedule's cursor (as the Driver's schedule load read it) before the
//     plan's make-up job becomes one more make-up job.
//   - plant.MintDropsOccurrence: a mint plan drops every second on-time
//     occurrence.

// plant returns c with the Scenario's planted Command edit applied; c
// itself outside a build with the tag backwave_plant.
func (n *simNode) plant(c node.StoreCommand) node.StoreCommand {
	if !plant.Enabled {
		return c
	}
	m, ok := c.(node.Mint)
	if !ok {
		return c
	}
	switch n.w.sc.Mutation {
	case plant.CoalesceEveryMissed, plant.MintDropsOccurrence:
	default:
		return c
	}
	plans := make([]core.MintPlan, len(m.Plans))
	for i, p := range m.Plans {
		plans[i] = n.plantPlan(p)
	}
	m.Plans = plans
	return m
}

// plantPlan edits one mint plan.
func (n *simNode) plantPlan(p core.MintPlan) core.MintPlan {
	p.Mints = append([]core.Mint(nil), p.Mints...)
	switch n.w.sc.Mutation {
	case plant.CoalesceEveryMissed:
		if len(p.Mints) == 0 || !p.Mints[0].MakeUp {
			return p
		}
		for _, ls := range n.loaded {
			if ls.Schedule.Name != p.Schedule {
				continue
			}
			expr, err := cron.Parse(ls.Schedule.Spec)
			if err != nil || ls.Location == nil {
				return p
			}
			var every []core.Mint
			for at := expr.Next(ls.Schedule.Cursor, ls.Location); !at.IsZero() && at.Before(p.Mints[0].At); at = expr.Next(at, ls.Location) {
				every = append(every, core.Mint{At: at, MakeUp: true})
			}
			p.Mints = append(every, p.Mints...)
			return p
		}
	case plant.MintDropsOccurrence:
		var kept []core.Mint
		for i, m := range p.Mints {
			if m.MakeUp || i%2 == 0 {
				kept = append(kept, m)
			}
		}
		p.Mints = kept
	}
	return p
}

// notePlanted keeps what a planted edit needs of an answer: the schedules
// a load read, which the Mint after it is planned from.
func (n *simNode) notePlanted(c node.StoreCommand, r node.Reply) {
	if !plant.Enabled || n.w.sc.Mutation != plant.CoalesceEveryMissed {
		return
	}
	if _, ok := c.(node.LoadSchedules); ok && r.Err == nil {
		n.loaded = r.Schedules
	}
}
