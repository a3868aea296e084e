package backwave

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
)

// DefaultMaxAttempts is the attempt budget of a job when neither the job nor
// Config.MaxAttempts sets one.
const DefaultMaxAttempts = core.DefaultMaxAttempts

// Defaults of WorkerGroupOptions and Config: a zero knob takes the value
// here. Each is defined once, in the layer that applies it.
const (
	// DefaultPoolSize is the PoolSize of a Worker Group that sets none.
	DefaultPoolSize = node.DefaultPoolSize
	// DefaultLeaseDuration is the LeaseDuration of a Worker Group that sets
	// none. Its HeartbeatInterval then defaults to a third of it.
	DefaultLeaseDuration = node.DefaultLeaseDuration
	// DefaultMaxClaimBatch is the MaxClaimBatch of a Worker Group that sets
	// none. Its MaxOutcomeBatch then defaults to the same.
	DefaultMaxClaimBatch = node.DefaultMaxClaimBatch
	// DefaultPollInterval is the PollInterval of a Worker Group that sets
	// none.
	DefaultPollInterval = node.DefaultPollInterval
	// DefaultMaintenanceInterval is the MaintenanceInterval of a Worker
	// Group that sets none.
	DefaultMaintenanceInterval = node.DefaultMaintenanceInterval
	// DefaultPumps is the Pumps of a Worker Group that sets none.
	DefaultPumps = 1
	// DefaultDrainTimeout is the Config.DrainTimeout used when it is 0.
	DefaultDrainTimeout = node.DefaultDrainTimeout
	// DefaultRelinquishTimeout is the Config.RelinquishTimeout used when it
	// is 0.
	DefaultRelinquishTimeout = node.DefaultRelinquishTimeout
	// DefaultFailureDetailLimit is the Config.FailureDetailLimit used when
	// it is 0.
	DefaultFailureDetailLimit = shell.DefaultFailureDetailLimit
	// DefaultMaxOutputBytes is the Config.MaxOutputBytes used when it is 0.
	DefaultMaxOutputBytes = 1 << 20
)

// FailureDetailEnv is the environment variable that turns Failure Detail
// capture off when set to "off", whatever Config says.
const FailureDetailEnv = "BACKWAVE_FAILURE_DETAIL"

// WorkerGroupOptions configure one Worker Group: the Queues it serves and how
// its Pumps claim and run their jobs. A zero knob takes its default;
// NewClient rejects values no default can mend (negative sizes and
// durations, a HeartbeatInterval not below LeaseDuration) with an error
// wrapping ErrInvalidConfig that names the knob and its value.
type WorkerGroupOptions struct {
	// Name identifies the group; required, and unique within a Client.
	Name string
	// Policy says which Queues the group serves and in what order.
	// Required.
	Policy DispatchPolicy
	// PoolSize is the number of Workers (execution slots) of each Pump: the
	// most handlers one Pump runs at once, counting finished ones whose
	// outcome is not yet reported (Backpressure). At least 1
	// (DefaultPoolSize if 0).
	PoolSize int
	// LeaseDuration is the length of each Lease (DefaultLeaseDuration if 0).
	LeaseDuration time.Duration
	// HeartbeatInterval paces Lease renewal; it must be below LeaseDuration
	// (a third of LeaseDuration if 0).
	HeartbeatInterval time.Duration
	// MaxClaimBatch caps the jobs leased per claim (DefaultMaxClaimBatch if
	// 0).
	MaxClaimBatch int
	// MaxOutcomeBatch is the buffered-outcome count that triggers a report
	// (MaxClaimBatch if 0).
	MaxOutcomeBatch int
	// PollInterval paces claim passes when no Wake-Up Hint comes
	// (DefaultPollInterval if 0).
	PollInterval time.Duration
	// MaintenanceInterval is the slower beat of lease expiry, schedule
	// minting and retention (DefaultMaintenanceInterval if 0).
	MaintenanceInterval time.Duration
	// Pumps is how many independent Driver loops the group runs, each with
	// its own Worker id, PoolSize pool and claim stream: one store round
	// trip is in flight per Pump at a time, so more Pumps multiply the
	// group's store I/O parallelism (DefaultPumps if 0).
	Pumps int
}

// DefaultWorkerGroup returns options for a group named name serving policy,
// with its independent knobs set to their defaults for all to read.
// HeartbeatInterval and MaxOutcomeBatch stay zero, so they keep following
// LeaseDuration and MaxClaimBatch when those are changed.
func DefaultWorkerGroup(name string, policy DispatchPolicy) WorkerGroupOptions {
	return WorkerGroupOptions{
		Name:                name,
		Policy:              policy,
		PoolSize:            DefaultPoolSize,
		LeaseDuration:       DefaultLeaseDuration,
		MaxClaimBatch:       DefaultMaxClaimBatch,
		PollInterval:        DefaultPollInterval,
		MaintenanceInterval: DefaultMaintenanceInterval,
		Pumps:               DefaultPumps,
	}
}

// driver maps the group's Driver knobs onto node.Config field by field,
// unchanged: node.Config.WithDefaults and Validate are their one home.
func (g WorkerGroupOptions) driver() node.Config {
	return node.Config{
		Policy:              g.Policy.policy,
		PoolSize:            g.PoolSize,
		LeaseDuration:       g.LeaseDuration,
		MaxClaimBatch:       g.MaxClaimBatch,
		MaxOutcomeBatch:     g.MaxOutcomeBatch,
		MaintenanceInterval: g.MaintenanceInterval,
	}
}

// pacing maps the group's tickers and the Client's stop deadlines onto
// node.Pacing, unchanged: node.Pacing.WithDefaults and Validate are their
// one home.
func (g WorkerGroupOptions) pacing(cfg Config) node.Pacing {
	return node.Pacing{
		PollInterval:      g.PollInterval,
		HeartbeatInterval: g.HeartbeatInterval,
		DrainTimeout:      cfg.DrainTimeout,
		RelinquishTimeout: cfg.RelinquishTimeout,
	}
}

// pumps is the group's Pump count; Pumps is the one knob of a group that only
// this package reads, so its default and check live here.
func (g WorkerGroupOptions) pumps() (int, error) {
	switch {
	case g.Pumps < 0:
		return 0, fmt.Errorf("%w: Pumps %d (want ≥ 0)", ErrInvalidConfig, g.Pumps)
	case g.Pumps == 0:
		return DefaultPumps, nil
	}
	return g.Pumps, nil
}

// Config configures a Client. The zero value is an insert-only Client on the
// host's clock. A zero knob takes its default. RetryPolicy, AttemptTimeout,
// AttemptTimeoutGrace, DrainTimeout, RelinquishTimeout, FailureDetailLimit
// and Retention are read only by the Pumps, so NewClient checks them with
// the Worker Groups, as part of each group's configuration; an insert-only
// Client ignores them.
type Config struct {
	// Handlers holds the handlers. Required when Groups is not empty.
	Handlers *Handlers
	// Groups are the Worker Groups this Client runs; none makes the Client
	// insert-only.
	Groups []WorkerGroupOptions
	// Logger receives logs with the canonical keys job, queue, wire_name,
	// attempt and worker (slog.Default() if nil).
	Logger *slog.Logger
	// Clock is the node's clock: it stamps the Pumps' events and turns
	// WithDelay into a due time. Nil means the store's own clock when the
	// store has one (store.ClockSource: the In-Memory Store, the Embedded
	// Adapter), else the host's. Lease and due comparisons use the store's
	// clock. A store on a vtime.Manual clock accepts only that same clock
	// here: NewClient refuses any other, since due times on a clock the
	// store never reaches would never come due.
	Clock Clock
	// RetryPolicy applies to every Wire Name without its own
	// (DefaultRetryPolicy() if zero: with DefaultMaxAttempts, about 13 h
	// of retries before a job is Dead-Lettered; docs/retries.md).
	RetryPolicy RetryPolicy
	// AttemptTimeout bounds each Attempt of every handler registered
	// without WithAttemptTimeout; zero (the default) means no timeout. See
	// WithAttemptTimeout for what happens at and after the timeout.
	AttemptTimeout time.Duration
	// AttemptTimeoutGrace is how long a handler may keep running past its
	// attempt timeout with its Lease still renewed; after it the job is
	// left to run again elsewhere (DefaultAttemptTimeoutGrace if 0).
	AttemptTimeoutGrace time.Duration
	// SnoozeCap is how many times a job of a Wire Name registered without
	// WithSnoozeCap may return Snooze without its Attempt being charged,
	// over its whole existence; a Snooze past it is charged like a failure
	// (DefaultSnoozeCap if 0; NoFreeSnoozes for none).
	SnoozeCap int
	// HandlerGrace is how long a Pump still counts as a handler of its
	// Wire Names after its last stamp in the fleet registry. Every Pump
	// stamps the Wire Names its Client has handlers for on its maintenance
	// beat, and leaves alone the jobs of a Wire Name some other live Pump
	// handles and it does not, so a Mixed-Version Fleet does not Quarantine
	// the jobs only its newer nodes can run. A Wire Name no Pump has
	// stamped for HandlerGrace is claimed again, and its jobs Quarantined
	// as before. It must exceed every group's MaintenanceInterval
	// (node.DefaultHandlerGrace, a minute, or three MaintenanceIntervals
	// when that is longer, if 0).
	HandlerGrace time.Duration
	// MaxAttempts is the attempt budget of jobs that set none: how many
	// Attempts one life of a job gets before it dead-letters
	// (DefaultMaxAttempts if 0).
	MaxAttempts int
	// DrainTimeout is how long Stop lets running handlers finish
	// (DefaultDrainTimeout if 0).
	DrainTimeout time.Duration
	// RelinquishTimeout bounds the best-effort hand-back of Leases at the
	// end of Stop (DefaultRelinquishTimeout if 0).
	RelinquishTimeout time.Duration
	// FailureDetailLimit bounds Failure Detail in bytes; longer text is cut
	// at a rune boundary and marked (DefaultFailureDetailLimit if 0).
	FailureDetailLimit int
	// FailureDetailOff turns Failure Detail capture off. Setting the
	// environment variable BACKWAVE_FAILURE_DETAIL=off does the same.
	FailureDetailOff bool
	// MaxOutputBytes bounds Job Output; larger output fails the Attempt
	// (DefaultMaxOutputBytes if 0).
	MaxOutputBytes int
	// Middleware wraps every Attempt's handler call, first listed
	// outermost.
	Middleware []Middleware
	// EnqueueMiddleware wraps every enqueue call's store insert, first
	// listed outermost; see EnqueueMiddleware.
	EnqueueMiddleware []EnqueueMiddleware
	// Observers are told, in process and in order, what this Client
	// enqueues and what its Pumps do (see Observer). None costs nothing.
	Observers []Observer
	// NodeID names this process in the Worker ids of its Pumps
	// ("<NodeID>/<group>/<pump>"). Default: host name plus a random suffix.
	// Worker ids must be unique across the cluster.
	NodeID string
	// NodeHeartbeat is how often a started Client stamps its row in the
	// node registry (Admin.Nodes): its host, pid, Version, Worker Groups
	// with their Queues, and running count, on the store's clock. The row
	// shows the node live while its last stamp is at most NodeLiveBeats of
	// these old, and expired after; Stop removes it. Zero (the default)
	// means the shortest HeartbeatInterval of the Worker Groups (a third
	// of their LeaseDuration when unset; 20 s with the defaults), or a
	// third of DefaultLeaseDuration for a Client without groups.
	NodeHeartbeat time.Duration
	// Schedules are Recurring Schedules registered at Start, each as
	// Client.RegisterSchedule does: a declarative set kept in code. A
	// schedule dropped from the set is not removed from the store; remove
	// it with Client.RemoveSchedule or the CLI. Invalid entries fail
	// NewClient.
	Schedules []RecurringSchedule
	// Retention, if set, purges terminal jobs on the maintenance beat of
	// this Client's first Pump. Nil (the default) purges nothing, and
	// terminal jobs accumulate in the store.
	Retention *RetentionPolicy
	// TransitionObservers are delivered the transitions of their declared
	// states, at-least-once, while the Client runs (see
	// TransitionObserver). They need a store that records the Transition
	// Log: NewClient refuses one opened with history=off. None (the
	// default) costs nothing.
	TransitionObservers []TransitionObserver
}
