package node

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// PolicyKind selects a Dispatch Policy.
type PolicyKind uint8

const (
	// PolicyStrict claims the whole free capacity in one batch over the
	// Queues in their listed order; later Queues may starve.
	PolicyStrict PolicyKind = iota + 1
	// PolicyWeighted splits the free capacity across Queues by smooth
	// weighted round-robin (deterministic, no randomness) and claims one
	// batch per Queue, each with the other Queues as fallthrough.
	PolicyWeighted
)

// String names the kind.
func (k PolicyKind) String() string {
	switch k {
	case PolicyStrict:
		return "strict"
	case PolicyWeighted:
		return "weighted"
	}
	return "policy(?)"
}

// QueueWeight is one Queue of a Dispatch Policy with its weight (used by
// Weighted only; at least 1).
type QueueWeight struct {
	Queue  string
	Weight int
}

// DispatchPolicy is a Worker Group's rule for choosing which Queue to claim
// from next. Both kinds are work-conserving: a worker never idles while any
// served Queue has due work.
type DispatchPolicy struct {
	Kind   PolicyKind
	Queues []QueueWeight
}

// Strict returns a Strict Dispatch Policy over queues in priority order.
func Strict(queues ...string) DispatchPolicy {
	p := DispatchPolicy{Kind: PolicyStrict}
	for _, q := range queues {
		p.Queues = append(p.Queues, QueueWeight{Queue: q, Weight: 1})
	}
	return p
}

// Weighted returns a Weighted Dispatch Policy.
func Weighted(queues ...QueueWeight) DispatchPolicy {
	return DispatchPolicy{Kind: PolicyWeighted, Queues: queues}
}

// QueueNames returns the policy's Queues in order.
func (p DispatchPolicy) QueueNames() []string {
	out := make([]string, len(p.Queues))
	for i, q := range p.Queues {
		out[i] = q.Queue
	}
	return out
}

// Validate reports whether the policy is usable: a known kind, at least one
// Queue, valid and distinct names, weights of at least 1.
func (p DispatchPolicy) Validate() error {
	if p.Kind != PolicyStrict && p.Kind != PolicyWeighted {
		return invalid("Policy has no kind (use Strict or Weighted)")
	}
	if len(p.Queues) == 0 {
		return invalid("Policy serves no queue")
	}
	seen := make(map[string]bool, len(p.Queues))
	for _, q := range p.Queues {
		if err := store.ValidateName("queue", q.Queue); err != nil {
			return invalid("Policy: %w", err)
		}
		if seen[q.Queue] {
			return invalid("Policy lists queue %q twice", q.Queue)
		}
		seen[q.Queue] = true
		if q.Weight < 1 {
			return invalid("Policy: queue %q has weight %d (want ≥ 1)", q.Queue, q.Weight)
		}
	}
	return nil
}

// ErrInvalidConfig is wrapped by every error that reports a knob the Driver,
// a Pump or a Client cannot run with: Config.Validate, Pacing.Validate,
// DispatchPolicy.Validate and RetentionPolicy.Validate here, and the
// configuration errors of shell.New and backwave.NewClient. Those two
// packages export this same value, so errors.Is matches it whichever layer
// found the problem.
var ErrInvalidConfig = errors.New("backwave: invalid config")

// invalid returns an error wrapping ErrInvalidConfig whose text names the
// knob and its bad value, as format and args say.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}

// Config is one Driver's configuration, mapped by the Shell from the public
// WorkerGroupOptions. It is the one home of the Driver's knobs: each default
// is written in WithDefaults and each check in Validate, and the layers above
// forward their values unchanged. Validate does not fill zero values:
// WithDefaults does, and Validate checks the result.
type Config struct {
	// Worker is the lease-holder identity of this Driver's Pump.
	Worker job.WorkerID
	Policy DispatchPolicy
	// PoolSize is the number of Workers: executing, buffered and in-flight
	// outcomes together never exceed it (Backpressure).
	PoolSize int
	// LeaseDuration is the length of each Lease from the store's clock.
	LeaseDuration time.Duration
	// MaxClaimBatch caps the jobs leased per claim pass.
	MaxClaimBatch int
	// MaxOutcomeBatch is the buffered-outcome count that triggers a flush.
	MaxOutcomeBatch int
	// MaintenanceInterval is the slower beat of lease expiry and, when
	// configured, schedule minting and retention.
	MaintenanceInterval time.Duration
	// ExpireBatch bounds one lease-expiry sweep; a full sweep is re-issued.
	ExpireBatch int
	// RetryPolicy applies to failed Attempts of every Wire Name not in
	// RetryPolicies.
	RetryPolicy   core.RetryPolicy
	RetryPolicies map[string]core.RetryPolicy

	// AttemptTimeout bounds each Attempt of every Wire Name not in
	// AttemptTimeouts, timed from the Now of the ClaimDone that leased it.
	// The Driver puts it on the Attempt's Execute, and the Shell cancels
	// the handler's context when it is over; a handler still running
	// AttemptTimeoutGrace later no longer has its Lease renewed (see
	// LetLapse). Zero (the default) means no timeout.
	AttemptTimeout time.Duration
	// AttemptTimeouts are the Wire Names' own attempt timeouts, in place of
	// AttemptTimeout; an entry of zero means no timeout for that Wire Name.
	AttemptTimeouts map[string]time.Duration
	// AttemptTimeoutGrace is how long past its timeout a handler may still
	// run with its Lease renewed, time to notice its cancelled context and
	// return (DefaultAttemptTimeoutGrace if zero).
	AttemptTimeoutGrace time.Duration

	// SnoozeCap is how many snoozes a job of every Wire Name not in
	// SnoozeCaps gets free over its whole existence: a snooze below the
	// cap goes back to Scheduled without charging its Attempt, one at the
	// cap is charged like a failure (core.Decide), so a handler cannot
	// snooze forever. Zero means DefaultSnoozeCap; NoFreeSnoozes gives
	// none.
	SnoozeCap int
	// SnoozeCaps are the Wire Names' own snooze caps, in place of
	// SnoozeCap; an entry of zero gives that Wire Name no free snooze.
	SnoozeCaps map[string]int

	// Schedules makes the maintenance beat load Recurring Schedules and
	// mint their jobs. Minting is idempotent, so any number of Drivers may
	// do it; one per process is enough.
	Schedules bool
	// MintLookahead lets a mint create the jobs of occurrences up to this
	// far ahead, due at their instants, so they start on time rather than
	// at the next beat (default: MaintenanceInterval).
	MintLookahead time.Duration
	// MissedAfter is how late an occurrence may be minted and still count
	// as on time; older ones are missed, and the schedule's Catch-Up
	// Policy applies (default: the larger of a minute and two
	// MaintenanceIntervals; it must exceed MaintenanceInterval).
	MissedAfter time.Duration
	// MaxMintOccurrences bounds the occurrences one plan mints
	// (DefaultMaxMintOccurrences).
	MaxMintOccurrences int
	// Retention, if set, makes the maintenance beat run the two purge
	// sweeps. Nil (the default) purges nothing: terminal jobs accumulate.
	Retention *RetentionPolicy

	// WireNames are the Wire Names the Shell has handlers for. Set (even
	// to an empty list), the Driver takes part in the fleet registry
	// (fleet.go): it stamps them on the maintenance beat, and its claims
	// skip the Wire Names some other live Pump handles and this one does
	// not (core.FleetSkip). Nil leaves the registry alone: the Driver
	// claims every job of its Queues, as a Driver without a registry
	// does.
	WireNames []string
	// HandlerGrace is how long after a Pump's last stamp it still counts
	// as a live handler of its Wire Names (core.HandlerLive). A Wire Name
	// no live Pump handles is claimed again, and its jobs Quarantined by a
	// node without its handler, at most this long after its last
	// handler's last stamp. It must exceed MaintenanceInterval, the
	// stamps' cadence (default: DefaultHandlerGrace, or three
	// MaintenanceIntervals when that is longer).
	HandlerGrace time.Duration

	// plant is the known bug the Simulator's tests plant so they can prove
	// their oracles catch it: set only by SetPlant, which only a build with
	// the tag backwave_plant has (package internal/plant).
	plant plant.Bug
}

// WithDefaults returns c with zero fields set to their defaults
// (MaxOutcomeBatch defaults to MaxClaimBatch, so one claim batch's outcomes
// coalesce into one fenced write).
func (c Config) WithDefaults() Config {
	if c.PoolSize == 0 {
		c.PoolSize = DefaultPoolSize
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.MaxClaimBatch == 0 {
		c.MaxClaimBatch = DefaultMaxClaimBatch
	}
	if c.MaxOutcomeBatch == 0 {
		c.MaxOutcomeBatch = c.MaxClaimBatch
	}
	if c.MaintenanceInterval == 0 {
		c.MaintenanceInterval = DefaultMaintenanceInterval
	}
	if c.ExpireBatch == 0 {
		c.ExpireBatch = DefaultExpireBatch
	}
	if c.RetryPolicy == (core.RetryPolicy{}) {
		c.RetryPolicy = core.DefaultRetryPolicy()
	}
	if c.MintLookahead == 0 {
		c.MintLookahead = c.MaintenanceInterval
	}
	if c.MissedAfter == 0 {
		c.MissedAfter = max(time.Minute, 2*c.MaintenanceInterval)
	}
	if c.MaxMintOccurrences == 0 {
		c.MaxMintOccurrences = DefaultMaxMintOccurrences
	}
	if c.AttemptTimeoutGrace == 0 {
		c.AttemptTimeoutGrace = DefaultAttemptTimeoutGrace
	}
	if c.SnoozeCap == 0 {
		c.SnoozeCap = DefaultSnoozeCap
	}
	if c.HandlerGrace == 0 {
		c.HandlerGrace = max(DefaultHandlerGrace, 3*c.MaintenanceInterval)
	}
	if c.Retention != nil {
		r := *c.Retention
		if r.Batch == 0 {
			r.Batch = DefaultPurgeBatch
		}
		c.Retention = &r
	}
	return c
}

// Validate reports the first problem with c; the error wraps
// ErrInvalidConfig and names the knob and its value.
func (c Config) Validate() error {
	switch {
	case c.Worker == "":
		return invalid("Worker is empty (want the Pump's lease-holder id)")
	case c.PoolSize < 1:
		return invalid("PoolSize %d (want ≥ 1)", c.PoolSize)
	case c.LeaseDuration <= 0:
		return invalid("LeaseDuration %v (want > 0)", c.LeaseDuration)
	case c.MaxClaimBatch < 1:
		return invalid("MaxClaimBatch %d (want ≥ 1)", c.MaxClaimBatch)
	case c.MaxOutcomeBatch < 1:
		return invalid("MaxOutcomeBatch %d (want ≥ 1)", c.MaxOutcomeBatch)
	case c.MaintenanceInterval <= 0:
		return invalid("MaintenanceInterval %v (want > 0)", c.MaintenanceInterval)
	case c.ExpireBatch < 0:
		return invalid("ExpireBatch %d (want ≥ 0)", c.ExpireBatch)
	case c.MintLookahead < 0:
		return invalid("MintLookahead %v (want ≥ 0)", c.MintLookahead)
	case c.MissedAfter <= c.MaintenanceInterval:
		return invalid("MissedAfter %v (want above MaintenanceInterval %v, or every beat would find its occurrences missed)",
			c.MissedAfter, c.MaintenanceInterval)
	case c.MaxMintOccurrences < 1:
		return invalid("MaxMintOccurrences %d (want ≥ 1)", c.MaxMintOccurrences)
	case c.AttemptTimeout < 0:
		return invalid("AttemptTimeout %v (want ≥ 0; 0 is no timeout)", c.AttemptTimeout)
	case c.AttemptTimeoutGrace < 0:
		return invalid("AttemptTimeoutGrace %v (want ≥ 0)", c.AttemptTimeoutGrace)
	case c.SnoozeCap < NoFreeSnoozes:
		return invalid("SnoozeCap %d (want ≥ 0, or NoFreeSnoozes)", c.SnoozeCap)
	case c.HandlerGrace <= c.MaintenanceInterval:
		return invalid("HandlerGrace %v (want above MaintenanceInterval %v, or a live Pump would look dead between its stamps)",
			c.HandlerGrace, c.MaintenanceInterval)
	}
	if err := validateWireNames(c.WireNames); err != nil {
		return err
	}
	for name, n := range c.SnoozeCaps {
		if n < 0 {
			return invalid("SnoozeCap of wire name %q: %d (want ≥ 0)", name, n)
		}
	}
	for name, d := range c.AttemptTimeouts {
		if d < 0 {
			return invalid("AttemptTimeout of wire name %q: %v (want ≥ 0; 0 is no timeout)", name, d)
		}
	}
	if c.Retention != nil {
		if err := c.Retention.Validate(); err != nil {
			return err
		}
	}
	if err := c.Policy.Validate(); err != nil {
		return err
	}
	if err := c.RetryPolicy.Validate(); err != nil {
		return invalid("RetryPolicy: %w", err)
	}
	for name, p := range c.RetryPolicies {
		if err := p.Validate(); err != nil {
			return invalid("RetryPolicy of wire name %q: %w", name, err)
		}
	}
	return nil
}

func (c *Config) retryPolicy(wireName string) core.RetryPolicy {
	if p, ok := c.RetryPolicies[wireName]; ok {
		return p
	}
	return c.RetryPolicy
}

// snoozeCap returns the free snoozes a job of wireName gets (0: none).
func (c *Config) snoozeCap(wireName string) int {
	if n, ok := c.SnoozeCaps[wireName]; ok {
		return n
	}
	return max(c.SnoozeCap, 0)
}

// attemptTimeout returns the attempt timeout of wireName's Attempts (zero:
// none).
func (c *Config) attemptTimeout(wireName string) time.Duration {
	if d, ok := c.AttemptTimeouts[wireName]; ok {
		return d
	}
	return c.AttemptTimeout
}

// WalkerConfig configures a Walker: one Transition Observer's walk of the
// Transition Log on one node. Like Config, it is the one home of its knobs:
// each default is in the defaults table (defaults.go), filled in by
// WithDefaults, and each check is in Validate.
type WalkerConfig struct {
	// Observer is the registration's name; required.
	Observer string
	// States are the declared states; at least one.
	States []job.State
	// LeaseDuration is the walk's Lease length (DefaultWalkLeaseDuration if
	// zero).
	LeaseDuration time.Duration
	// Interval is how long a caught-up walk waits before its next claim,
	// and the first backoff after a failed delivery (DefaultWalkInterval if
	// zero).
	Interval time.Duration
	// MaxBackoff caps the wait after consecutive failures
	// (DefaultWalkMaxBackoff if zero).
	MaxBackoff time.Duration
	// Limit bounds the entries one claim reads (DefaultWalkLimit if zero).
	Limit int
	// StartAtEnd registers a new Observer at the end of the Transition
	// Log, so its walk begins with the entries written after its first
	// claim (store.ObserverClaimParams.StartAtEnd).
	StartAtEnd bool

	// plant is the known bug the Simulator's tests plant: set only by
	// SetPlant, which only a build with the tag backwave_plant has.
	plant plant.Bug
}

// WithDefaults returns c with zero fields set to their defaults.
func (c WalkerConfig) WithDefaults() WalkerConfig {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultWalkLeaseDuration
	}
	if c.Interval == 0 {
		c.Interval = DefaultWalkInterval
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultWalkMaxBackoff
	}
	if c.Limit == 0 {
		c.Limit = DefaultWalkLimit
	}
	return c
}

// Validate reports the first problem with c, defaults filled or not; the
// error wraps ErrInvalidConfig and names the knob and its value.
func (c WalkerConfig) Validate() error {
	p := store.ObserverClaimParams{Observer: c.Observer, Holder: "validate", LeaseDuration: c.LeaseDuration, States: c.States, Limit: c.Limit}
	switch {
	case c.LeaseDuration < 0:
		return invalid("observer %q: LeaseDuration %v (want > 0)", c.Observer, c.LeaseDuration)
	case c.Interval < 0:
		return invalid("observer %q: Interval %v (want > 0)", c.Observer, c.Interval)
	case c.Limit < 0:
		return invalid("observer %q: Limit %d (want ≥ 1)", c.Observer, c.Limit)
	}
	c = c.WithDefaults()
	p.LeaseDuration, p.Limit = c.LeaseDuration, c.Limit
	if err := p.Validate(); err != nil {
		// The claim's own checks (name, states), reported as a knob's: the
		// same text under this package's sentinel.
		return invalid("%s", strings.TrimPrefix(err.Error(), store.ErrInvalidParams.Error()+": "))
	}
	if c.MaxBackoff < c.Interval {
		return invalid("observer %q: MaxBackoff %v below Interval %v (want 0 < Interval ≤ MaxBackoff)", c.Observer, c.MaxBackoff, c.Interval)
	}
	if !c.plant.Known() {
		return invalid("observer %q: unknown planted bug %q", c.Observer, c.plant)
	}
	return nil
}

// Tick is how often the Shell should feed WalkTick: often enough to both
// start a round on time and renew the Lease while delivering.
func (c WalkerConfig) Tick() time.Duration {
	c = c.WithDefaults()
	return min(c.Interval, c.LeaseDuration/3)
}
