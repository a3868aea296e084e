package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

// Causes a handler's context is cancelled with. Read them with
// context.Cause(ctx).
var (
	// ErrLeaseLost: the Lease of the Attempt was found lost at a renewal;
	// another node may already own the job. The Attempt's result is dropped.
	ErrLeaseLost = errors.New("backwave: lease lost")
	// ErrShutdown: the node stopped and its drain period ran out; the Lease
	// is relinquished and the Attempt's result is dropped.
	ErrShutdown = errors.New("backwave: worker shutting down")
	// ErrCancelRequested: an operator asked the job to stop. A handler that
	// then returns an error ends the job Cancelled.
	ErrCancelRequested = errors.New("backwave: cancel requested")
	// ErrAttemptTimeout: the Attempt ran past its attempt timeout
	// (node.Execute.Timeout). A handler that then returns an error fails
	// the Attempt with Failure Detail naming the timeout, and the retry
	// policy applies as to any failure; one still running past the grace
	// no longer has its Lease renewed (node.LetLapse).
	ErrAttemptTimeout = errors.New("backwave: attempt timeout")
)

// ErrInvalidConfig is wrapped by New for a configuration it cannot run. It is
// node.ErrInvalidConfig, the one value every layer's configuration errors
// wrap.
var ErrInvalidConfig = node.ErrInvalidConfig

// DefaultFailureDetailLimit is the FailureDetailLimit of a Config that sets
// none.
const DefaultFailureDetailLimit = 4096

// Result is what an Executor reports about one finished Attempt. Only Result
// reaches the Driver; the rest stays in the Shell until the outcome is
// reported.
type Result struct {
	// Result says which way the Attempt went. The zero value is treated as
	// core.ResultFailed.
	Result core.Result
	// FailureDetail is the diagnostic text of a failed Attempt. The Pump
	// bounds it (Config.FailureDetailLimit) or drops it (FailureDetailOff).
	FailureDetail string
	// Output is the Job Output of a succeeded Attempt.
	Output []byte
	// TagDelta is merged into the job's Tags when the outcome applies.
	// Tags that fail job.Tag.Validate are dropped (and logged) so they
	// cannot make the whole outcome batch invalid.
	TagDelta []job.Tag
	// Snooze is, for core.ResultSnoozed, how long the job waits before it
	// is due again. A delay core.CheckSnoozeDelay refuses makes the Pump
	// report a failed Attempt naming the problem instead.
	Snooze time.Duration
}

// Executor runs the handler of one claimed Attempt. Execute is called on the
// Attempt's own goroutine and must return when ctx is cancelled (cooperative
// cancellation: the Pump never kills a goroutine). A panic is recovered by
// the Pump.
type Executor interface {
	Execute(ctx context.Context, j job.Job) Result
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, j job.Job) Result

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, j job.Job) Result { return f(ctx, j) }

// WallClock is the host's clock, the vtime.Clock of production. Inside a
// testing/synctest bubble it reads the bubble's fake time.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

var _ vtime.Clock = WallClock{}

// Config configures one Pump.
type Config struct {
	// Driver is the Node Driver's configuration; Driver.Worker is the
	// lease-holder identity of this Pump and must be unique in the cluster.
	Driver node.Config
	// Store is where the Pump claims, renews, reports, expires and
	// relinquishes. Required.
	Store store.Worker
	// Schedules is where the Pump loads Recurring Schedules and applies
	// mints; required when Driver.Schedules is set.
	Schedules store.Schedules
	// Retention is where the Pump purges; required when Driver.Retention
	// is set.
	Retention store.Retention
	// Fleet is where the Pump stamps and reads the fleet registry;
	// required when Driver.WireNames is set.
	Fleet store.Fleet
	// Hints, if set, announces Wake-Up Hints; hints for Queues the Driver's
	// Dispatch Policy does not serve are ignored.
	Hints store.HintSource
	// Executor runs handlers. Required.
	Executor Executor
	// Clock stamps every event's Now. Default WallClock. Tickers always run
	// on the host's timers.
	Clock vtime.Clock
	// Pacing times the poll and heartbeat tickers and Stop's drain and
	// relinquish deadlines; its defaults and checks are node.Pacing's, for
	// the Lease duration of Driver.
	node.Pacing
	// FailureDetailLimit bounds Failure Detail in bytes; longer text is cut
	// at a rune boundary and marked (DefaultFailureDetailLimit if zero).
	FailureDetailLimit int
	// FailureDetailOff drops Failure Detail entirely (for hosts where it may
	// carry personal data).
	FailureDetailOff bool
	// Logger receives the Pump's logs (slog.Default() if nil).
	Logger *slog.Logger
	// Observer, if set, is told what the Pump does as it happens (see
	// Observer). Nil costs nothing: no clock is read for it.
	Observer Observer
}

// withDefaults fills zero fields and validates. Driver and Pacing are
// defaulted and checked by the node package, which owns those knobs; this
// layer owns only the ones the Shell alone reads.
func (c Config) withDefaults() (Config, error) {
	c.Driver = c.Driver.WithDefaults()
	if err := c.Driver.Validate(); err != nil {
		return c, err
	}
	c.Pacing = c.Pacing.WithDefaults(c.Driver.LeaseDuration)
	if err := c.Pacing.Validate(c.Driver.LeaseDuration); err != nil {
		return c, err
	}
	if c.Clock == nil {
		c.Clock = WallClock{}
	}
	if c.FailureDetailLimit == 0 {
		c.FailureDetailLimit = DefaultFailureDetailLimit
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.Store == nil:
		return c, fmt.Errorf("%w: no Store", ErrInvalidConfig)
	case c.Driver.Schedules && c.Schedules == nil:
		return c, fmt.Errorf("%w: schedule minting without a Schedules store", ErrInvalidConfig)
	case c.Driver.Retention != nil && c.Retention == nil:
		return c, fmt.Errorf("%w: a retention policy without a Retention store", ErrInvalidConfig)
	case c.Driver.WireNames != nil && c.Fleet == nil:
		return c, fmt.Errorf("%w: wire names for the fleet registry without a Fleet store", ErrInvalidConfig)
	case c.Executor == nil:
		return c, fmt.Errorf("%w: no Executor", ErrInvalidConfig)
	case c.FailureDetailLimit < 0:
		return c, fmt.Errorf("%w: FailureDetailLimit %d (want ≥ 0)", ErrInvalidConfig, c.FailureDetailLimit)
	}
	return c, nil
}

// Config returns the configuration p runs with: cfg as given to New, with
// every default filled.
func (p *Pump) Config() Config { return p.cfg }
