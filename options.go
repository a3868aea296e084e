package backwave

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/vtime"
)

// RetryPolicy computes the backoff before the next Attempt of a job whose
// Attempt failed: Initial × Multiplier^(attempt-1), capped at Max, spread by
// ±Jitter, deterministic per (job, Attempt).
type RetryPolicy = core.RetryPolicy

// DefaultRetryPolicy returns the policy used when Config.RetryPolicy is zero:
// 1s, 2s, 4s, … capped at 1h, ±20%.
func DefaultRetryPolicy() RetryPolicy { return core.DefaultRetryPolicy() }

// DefaultMaxAttempts is the attempt ceiling when neither the job nor
// Config.MaxAttempts sets one.
const DefaultMaxAttempts = core.DefaultMaxAttempts

// DispatchPolicy is a Worker Group's rule for choosing which Queue to claim
// from next: Strict (priority order) or Weighted (smooth weighted
// round-robin with fallthrough). Build one with Strict or Weighted.
type DispatchPolicy = node.DispatchPolicy

// QueueWeight is one Queue of a Weighted Dispatch Policy with its weight
// (at least 1).
type QueueWeight = node.QueueWeight

// Strict returns a Strict Dispatch Policy: every due job of the first Queue
// before any of the second, and so on. Later Queues may starve.
func Strict(queues ...string) DispatchPolicy { return node.Strict(queues...) }

// Weighted returns a Weighted Dispatch Policy: free capacity is split across
// the Queues by weight, and a Queue with no due work lends its share to the
// others.
func Weighted(queues ...QueueWeight) DispatchPolicy { return node.Weighted(queues...) }

// Defaults of WorkerGroupOptions and Config.
const (
	DefaultPoolSize            = node.DefaultPoolSize
	DefaultLeaseDuration       = node.DefaultLeaseDuration
	DefaultMaxClaimBatch       = node.DefaultMaxClaimBatch
	DefaultPollInterval        = shell.DefaultPollInterval
	DefaultMaintenanceInterval = node.DefaultMaintenanceInterval
	DefaultDrainTimeout        = shell.DefaultDrainTimeout
	DefaultRelinquishTimeout   = shell.DefaultRelinquishTimeout
	DefaultFailureDetailLimit  = shell.DefaultFailureDetailLimit
	DefaultMaxOutputBytes      = 1 << 20
)

// FailureDetailEnv is the environment variable that turns Failure Detail
// capture off when set to "off", whatever Config says.
const FailureDetailEnv = "BACKWAVE_FAILURE_DETAIL"

// WorkerGroupOptions configure one Worker Group: the Queues it serves and how
// its Pumps claim and run their jobs. A zero duration or batch size means its
// default; PoolSize has none in a struct literal and must be set (start from
// DefaultWorkerGroup for a complete set of defaults). Negative values are
// errors.
type WorkerGroupOptions struct {
	// Name identifies the group; unique within a Client.
	Name string
	// Policy says which Queues the group serves and in what order.
	Policy DispatchPolicy
	// PoolSize is the number of Workers (execution slots) of each Pump: the
	// most handlers one Pump runs at once, counting finished ones whose
	// outcome is not yet reported (Backpressure). Required, at least 1
	// (DefaultPoolSize is 10).
	PoolSize int
	// LeaseDuration is the length of each Lease (DefaultLeaseDuration).
	LeaseDuration time.Duration
	// HeartbeatInterval paces Lease renewal; below LeaseDuration (default:
	// LeaseDuration/3).
	HeartbeatInterval time.Duration
	// MaxClaimBatch caps the jobs leased per claim (DefaultMaxClaimBatch).
	MaxClaimBatch int
	// MaxOutcomeBatch is the buffered-outcome count that triggers a report
	// (default: MaxClaimBatch).
	MaxOutcomeBatch int
	// PollInterval paces claim passes when no Wake-Up Hint comes
	// (DefaultPollInterval).
	PollInterval time.Duration
	// MaintenanceInterval is the slower beat of lease expiry
	// (DefaultMaintenanceInterval).
	MaintenanceInterval time.Duration
	// Pumps is how many independent Driver loops the group runs, each with
	// its own Worker id, PoolSize pool and claim stream: one store round
	// trip is in flight per Pump at a time, so more Pumps multiply the
	// group's store I/O parallelism (default 1).
	Pumps int
}

// DefaultWorkerGroup returns options for a group named name serving policy,
// with every knob at its default.
func DefaultWorkerGroup(name string, policy DispatchPolicy) WorkerGroupOptions {
	return WorkerGroupOptions{
		Name:                name,
		Policy:              policy,
		PoolSize:            DefaultPoolSize,
		LeaseDuration:       DefaultLeaseDuration,
		HeartbeatInterval:   DefaultLeaseDuration / 3,
		MaxClaimBatch:       DefaultMaxClaimBatch,
		PollInterval:        DefaultPollInterval,
		MaintenanceInterval: DefaultMaintenanceInterval,
		Pumps:               1,
	}
}

// withDefaults fills zero knobs (PoolSize excepted) and validates.
func (g WorkerGroupOptions) withDefaults() (WorkerGroupOptions, error) {
	fail := func(format string, args ...any) (WorkerGroupOptions, error) {
		return g, fmt.Errorf("%w: worker group %q: %s", ErrInvalidConfig, g.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case g.Name == "":
		return fail("no Name")
	case g.PoolSize < 1:
		return fail("PoolSize %d (want ≥ 1; DefaultPoolSize is %d)", g.PoolSize, DefaultPoolSize)
	case g.LeaseDuration < 0:
		return fail("LeaseDuration %v is negative", g.LeaseDuration)
	case g.HeartbeatInterval < 0:
		return fail("HeartbeatInterval %v is negative", g.HeartbeatInterval)
	case g.PollInterval < 0:
		return fail("PollInterval %v is negative", g.PollInterval)
	case g.MaintenanceInterval < 0:
		return fail("MaintenanceInterval %v is negative", g.MaintenanceInterval)
	case g.MaxClaimBatch < 0:
		return fail("MaxClaimBatch %d is negative", g.MaxClaimBatch)
	case g.MaxOutcomeBatch < 0:
		return fail("MaxOutcomeBatch %d is negative", g.MaxOutcomeBatch)
	case g.Pumps < 0:
		return fail("Pumps %d is negative", g.Pumps)
	}
	if err := g.Policy.Validate(); err != nil {
		return g, fmt.Errorf("%w: worker group %q: %w", ErrInvalidConfig, g.Name, err)
	}
	if g.LeaseDuration == 0 {
		g.LeaseDuration = DefaultLeaseDuration
	}
	if g.HeartbeatInterval == 0 {
		g.HeartbeatInterval = g.LeaseDuration / 3
	}
	if g.HeartbeatInterval >= g.LeaseDuration {
		return fail("HeartbeatInterval %v must be below LeaseDuration %v", g.HeartbeatInterval, g.LeaseDuration)
	}
	if g.MaxClaimBatch == 0 {
		g.MaxClaimBatch = DefaultMaxClaimBatch
	}
	if g.MaxOutcomeBatch == 0 {
		g.MaxOutcomeBatch = g.MaxClaimBatch
	}
	if g.PollInterval == 0 {
		g.PollInterval = DefaultPollInterval
	}
	if g.MaintenanceInterval == 0 {
		g.MaintenanceInterval = DefaultMaintenanceInterval
	}
	if g.Pumps == 0 {
		g.Pumps = 1
	}
	return g, nil
}

// Config configures a Client. The zero value is an insert-only Client on the
// host's clock.
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
	// WithDelay into a due time (the host's clock if nil). Lease and due
	// comparisons use the store's clock.
	Clock vtime.Clock
	// RetryPolicy applies to every Wire Name without its own
	// (DefaultRetryPolicy() if zero).
	RetryPolicy RetryPolicy
	// MaxAttempts is the attempt ceiling of jobs that set none
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
	// NodeID names this process in the Worker ids of its Pumps
	// ("<NodeID>/<group>/<pump>"). Default: host name plus a random suffix.
	// Worker ids must be unique across the cluster.
	NodeID string
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
}

// WallClock is the host's clock (time.Now), the default Config.Clock and the
// clock to give a store.Store that takes one, such as the In-Memory Store.
type WallClock = shell.WallClock
