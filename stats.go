package backwave

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/shell"
)

// StatsRateWindow is the span over which Stats computes ClaimsPerSecond and
// OutcomesPerSecond.
const StatsRateWindow = shell.RateWindow

// Stats is a snapshot of a Client: its Worker Groups and their Pumps, read
// from memory, and the Queues, read from the store.
type Stats struct {
	// Groups are the Client's Worker Groups, in Config order.
	Groups []GroupStats
	// Queues are every Queue the store knows, ordered by name.
	Queues []QueueStats
}

// GroupStats is one Worker Group of a Stats snapshot.
type GroupStats struct {
	Name string
	// Queues are the Queues the group's Dispatch Policy serves.
	Queues []string
	// Pumps are the group's Pumps, in order.
	Pumps []PumpStats
}

// PumpStats returns the Worker Groups of the Client and their Pumps, from
// memory: it never calls the store and never waits for a Pump.
func (c *Client) PumpStats() []GroupStats {
	out := make([]GroupStats, len(c.groups))
	for i, g := range c.groups {
		gs := GroupStats{Name: g.name, Queues: g.queues, Pumps: make([]PumpStats, len(g.pumps))}
		for k, p := range g.pumps {
			gs.Pumps[k] = pumpStatsOf(p.Stats())
		}
		out[i] = gs
	}
	return out
}

// Stats returns a snapshot of the Client: PumpStats, and every Queue the
// store knows with its Running count against its Concurrency Limit and
// whether it is paused, which costs one store call. If that call fails,
// Stats returns the Worker Groups without Queues, and the error.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	s := Stats{Groups: c.PumpStats()}
	qs, err := c.store.QueueList(ctx)
	if err != nil {
		return s, fmt.Errorf("backwave: stats: list queues: %w", err)
	}
	s.Queues = make([]QueueStats, len(qs))
	for i, q := range qs {
		s.Queues[i] = queueStatsOf(q)
	}
	return s, nil
}
