package sim

import (
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// Store is the store a run drives: the parts of the Storage Contract the
// world calls — the nodes' claims, renewals, reports, expiry sweeps,
// Relinquish, schedule loads, mints and purges (through node.Caller), the
// workload's inserts, Workflows and Operator Actions, and the oracles' reads — plus
// Wake-Up Hints, a restart and a transition feed. A normal run drives the
// In-Memory Store (NewMemStore); Options.Store opens another, which any
// implementation of the Storage Contract becomes through NewFeedStore.
//
// # The transition feed
//
// A Store delivers every state change it applies to StoreEnv.Feed, each
// exactly once, before the call that applied it returns, and every change
// of one job in the order applied; the oracles (oracle.go, latch.go) are
// built on it. The In-Memory Store delivers each change as it applies
// (memstore.Options.OnTransition), so the feed is the store's own order
// across jobs too. A store without such a callback delivers a call's
// changes once the call has applied them, in the store's commit order: a
// FeedStore walks its Transition Log for them (store.Observers) before the
// call returns.
//
// # Wake-Up Hints
//
// SubscribeHints announces hints as memstore does: synchronously, after the
// call's state changes reached the feed and before the call returns, once
// per Queue and call, Queues in name order, only for Queues left with a job
// claimable at once. Hints cut latency only, yet they steer when nodes
// poll, so a store that hints otherwise replays a Plan along another path.
type Store interface {
	store.Inserter
	store.Worker
	store.Queues
	store.Monitor
	store.Operator
	store.Dependencies
	store.Workflows
	store.Schedules
	store.Retention
	store.Observers
	store.Fleet
	store.HintSource

	// Restart stands for a restart of the store (a Fault Map's store
	// restart): every committed write survives, every hint subscription
	// is dropped, and the Store goes on serving calls and feeding
	// transitions as before. An error fails the run.
	Restart() error
}

// Feed receives one state change a Store applied: the job, the edge it
// moved along and its Attempt after the change (memstore's OnTransition).
type Feed func(id job.ID, e core.Edge, attempt job.Attempt)

// StoreEnv is what a run hands the Store it opens.
type StoreEnv struct {
	// Clock is the store's clock: the run's Virtual Time, which the run
	// moves. Every Lease and due comparison must read it.
	Clock vtime.Clock
	// Feed must receive every state change the store applies (see Store).
	Feed Feed
	// Mutation is the Scenario's planted bug. A store that cannot plant a
	// bug that lives in the store (plant.Bug.InStore) must refuse it.
	Mutation plant.Bug
	// Precision is Options.StorePrecision: Clock reads multiples of it, and
	// so is every time and duration the run hands the store. A store that
	// keeps times more coarsely must refuse a finer Precision: its
	// decisions would not be the ones the oracles expect.
	Precision time.Duration
}

// truncClock reads a clock truncated to a precision.
type truncClock struct {
	clock     vtime.Clock
	precision time.Duration
}

func (c truncClock) Now() time.Time { return c.clock.Now().Truncate(c.precision) }

// storeNow is Virtual Time as the store sees it: truncated to the store's
// precision (Options.StorePrecision).
func (w *world) storeNow() time.Time {
	if w.precision > 0 {
		return w.now.Truncate(w.precision)
	}
	return w.now
}

// storeDur is d as the run hands it to the store: truncated to the store's
// precision.
func (w *world) storeDur(d time.Duration) time.Duration { return d.Truncate(w.precision) }

// NewMemStore opens the In-Memory Store a normal run drives: a fresh
// memstore on env.Clock that feeds every change to env.Feed as it applies
// and plants env.Mutation; Restart replaces it by its crash-clone
// (memstore.Store.Clone), which keeps every committed write and the feed and
// drops the hint subscribers.
func NewMemStore(env StoreEnv) (Store, error) {
	opts := memstore.Options{Clock: env.Clock, OnTransition: env.Feed}
	plantStore(&opts, env.Mutation)
	return &memStore{Store: memstore.New(opts)}, nil
}

// memStore is the In-Memory Store as a run's Store.
type memStore struct {
	*memstore.Store
}

// Restart replaces the store by its crash-clone.
func (m *memStore) Restart() error {
	m.Store = m.Store.Clone()
	return nil
}
