package backwave

import (
	"context"
	"fmt"
	"time"

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

// PumpStats is one Pump of a Stats snapshot. Each field is current, but two
// fields may be a step of the Pump apart.
type PumpStats struct {
	// Worker is the Pump's lease-holder identity.
	Worker string
	// PoolSize is the Pump's Worker count.
	PoolSize int
	// Executing is how many Attempts are running (those past their attempt
	// timeout and grace included).
	Executing int
	// BufferedOutcomes is how many finished Attempts still hold their
	// Worker because their outcome is buffered or in flight to the store.
	BufferedOutcomes int
	// Free is the capacity the Pump would claim up to now: PoolSize less
	// the Workers held and the slots of a claim in flight. Zero means
	// Backpressure.
	Free int
	// Claimed and Reported count the jobs claimed and the outcomes the
	// store applied since the Pump started.
	Claimed, Reported uint64
	// ClaimsPerSecond and OutcomesPerSecond are the jobs claimed and the
	// outcomes applied per second over the last StatsRateWindow (or since
	// the Pump started, when that is shorter), on the Client's clock.
	ClaimsPerSecond, OutcomesPerSecond float64
	// LastStoreError is the most recent failed store call, nil if none.
	LastStoreError *StoreError
	// Stopping is set once the Pump's graceful stop began.
	Stopping bool
}

// StoreError is a failed store call of a Pump.
type StoreError struct {
	// Operation names the call, as StoreCallEvent.Operation does.
	Operation string
	// Err is the call's error.
	Err error
	// At is when it failed, on the Client's clock.
	At time.Time
}

// QueueStats is one Queue of a Stats snapshot, as the store counts it
// across the cluster.
type QueueStats struct {
	Name   string
	Paused bool
	// Running is how many of the Queue's jobs are Running: the slots of its
	// Concurrency Limit in use.
	Running int
	// Limit is the Queue's Concurrency Limit; 0 when it has none.
	Limit int
	// Rate is the Queue's Rate Limit (the zero QueueRate when it has
	// none), and RateStarted how many jobs started in its current window.
	Rate        QueueRate
	RateStarted int
}

// PumpStats returns the Worker Groups of the Client and their Pumps, from
// memory: it never calls the store and never waits for a Pump.
func (c *Client) PumpStats() []GroupStats {
	out := make([]GroupStats, len(c.groups))
	for i, g := range c.groups {
		gs := GroupStats{Name: g.name, Queues: g.queues, Pumps: make([]PumpStats, len(g.pumps))}
		for k, p := range g.pumps {
			gs.Pumps[k] = pumpStats(p.Stats())
		}
		out[i] = gs
	}
	return out
}

func pumpStats(s shell.Stats) PumpStats {
	ps := PumpStats{
		Worker:            string(s.Worker),
		PoolSize:          s.PoolSize,
		Executing:         s.Executing,
		BufferedOutcomes:  s.BufferedOutcomes,
		Free:              s.Free,
		Claimed:           s.Claimed,
		Reported:          s.Reported,
		ClaimsPerSecond:   s.ClaimsPerSecond,
		OutcomesPerSecond: s.OutcomesPerSecond,
		Stopping:          s.Stopping,
	}
	if e := s.LastStoreError; e != nil {
		ps.LastStoreError = &StoreError{Operation: e.Operation, Err: e.Err, At: e.At}
	}
	return ps
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
		s.Queues[i] = QueueStats{Name: q.Name, Paused: q.Paused, Running: q.Running, Limit: q.Limit, Rate: QueueRate(q.Rate), RateStarted: q.RateStarted}
	}
	return s, nil
}
