package jobtest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core/cron"
	"github.com/backwave/backwave/internal/takeover"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// DefaultGroup is the name of the Worker Group New adds when Config.Groups
// is empty: one group of backwave.DefaultWorkerGroup's knobs serving
// backwave.DefaultQueue.
const DefaultGroup = "jobtest"

// DefaultNodeID is the Config.NodeID New sets when it is empty, so Worker
// ids (JobInfo.Worker) read the same on every run.
const DefaultNodeID = "jobtest"

// DefaultIdleLimit is how many instants one RunUntilIdle visits at most,
// unless IdleLimit says otherwise. A test that reaches it has work that
// keeps coming due (a handler that enqueues itself, a schedule firing
// faster than the maintenance beat): it fails, naming the instant it would
// have visited next.
const DefaultIdleLimit = 100_000

// Option adjusts New.
type Option func(*settings)

type settings struct {
	start     time.Time
	idleLimit int
}

// IdleLimit sets how many instants one RunUntilIdle visits before it fails
// the test (DefaultIdleLimit otherwise). n must be positive.
func IdleLimit(n int) Option {
	return func(s *settings) { s.idleLimit = n }
}

// StartAt starts Virtual Time at t instead of vtime.Epoch (2000-01-01 UTC).
// Recurring Schedules in Config.Schedules are registered at t, so their
// first occurrence is the first after t.
func StartAt(t time.Time) Option {
	return func(s *settings) { s.start = t }
}

// Client is a backwave.Client on the In-Memory Store and Virtual Time whose
// Worker Groups run only when the test moves the clock: Advance and
// RunUntilIdle. Enqueue, EnqueueMany, RegisterSchedule, JobGet and Admin
// are the embedded Client's, unchanged. Start and Stop are not for it: New
// has taken the Pumps over (Start returns an error), and the test's
// cleanup closes them.
//
// A Client belongs to one test goroutine: Advance, AdvanceTo,
// RunUntilIdle and Close are for it, never for a handler. Handlers run on
// goroutines of their own, one at a time, while the test waits in Advance
// or RunUntilIdle; they may call Now, Enqueue and the Admin reads.
type Client struct {
	*backwave.Client

	t     testing.TB
	store *memstore.Store
	clock *vtime.Manual
	admin *backwave.Admin
	pumps []*shell.Manual
	// walks are the Transition Observers' walks; seen is the count of
	// transitions they were last told of (WalkManual.Owe).
	walks []*shell.WalkManual
	seen  uint64
	due   *dueSet
	poll  time.Duration // the shortest PollInterval of the Pumps
	limit int           // IdleLimit
	zones map[string]*time.Location
	exprs map[string]*cron.Expr
	// nextOcc caches each schedule's next occurrence (due.go).
	nextOcc map[string]nextAt
	closed  bool
}

// New returns a Client over a new In-Memory Store on a vtime.Manual clock,
// with cfg's handlers, Worker Groups, retry policies, timeouts, middleware
// and schedules. It differs from cfg only where a test needs it to:
//   - Config.Clock must be nil: the Client runs on the store's Virtual Time.
//   - Config.Groups empty (with Handlers set) means one group, DefaultGroup,
//     of backwave.DefaultWorkerGroup's knobs serving backwave.DefaultQueue.
//   - Config.NodeID empty means DefaultNodeID.
//   - Config.Logger nil means warnings and errors to t's output, stamped
//     with Virtual Time.
//
// A configuration NewClient refuses fails the test with its error. The
// Client is closed at t's cleanup: parked handlers are cancelled
// (backwave.ErrShutdown) and have returned before the cleanup does.
func New(t testing.TB, cfg backwave.Config, opts ...Option) *Client {
	t.Helper()
	s := settings{start: vtime.Epoch, idleLimit: DefaultIdleLimit}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	if s.idleLimit <= 0 {
		t.Fatalf("jobtest: IdleLimit(%d): want a positive number of instants", s.idleLimit)
		return nil
	}
	if cfg.Clock != nil {
		t.Fatalf("jobtest: Config.Clock is a %T: leave it nil, the Client runs on the store's Virtual Time (Client.Advance moves it)", cfg.Clock)
		return nil
	}
	if len(cfg.Groups) == 0 && cfg.Handlers != nil {
		cfg.Groups = []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup(DefaultGroup, backwave.Strict(backwave.DefaultQueue))}
	}
	if cfg.NodeID == "" {
		cfg.NodeID = DefaultNodeID
	}
	clock := vtime.NewManual(s.start)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{
			Level: slog.LevelWarn,
			// Stamp each record with Virtual Time, so logs read the same
			// on every run.
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey && len(groups) == 0 {
					return slog.Time(slog.TimeKey, clock.Now())
				}
				return a
			},
		}))
	}
	due := newDueSet()
	st := memstore.New(memstore.Options{Clock: clock, OnTransition: due.note})
	client, err := backwave.NewClient(st, cfg)
	if err != nil {
		t.Fatalf("jobtest: %v", err)
		return nil
	}
	admin, err := backwave.NewAdmin(st, "jobtest")
	if err != nil {
		t.Fatalf("jobtest: %v", err)
		return nil
	}
	req := &takeover.Request{}
	if err := client.Start(takeover.With(context.WithoutCancel(t.Context()), req)); err != nil {
		t.Fatalf("jobtest: %v", err)
		return nil
	}
	pumps := req.Pumps
	c := &Client{
		Client: client, t: t, store: st, clock: clock, admin: admin, pumps: pumps, walks: req.Walks, due: due, limit: s.idleLimit,
		zones: make(map[string]*time.Location), exprs: make(map[string]*cron.Expr), nextOcc: make(map[string]nextAt),
	}
	for _, m := range pumps {
		if iv := m.Config().PollInterval; c.poll == 0 || iv < c.poll {
			c.poll = iv
		}
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("jobtest: close: %v", err)
		}
	})
	return c
}

// Now returns the current Virtual Time.
func (c *Client) Now() time.Time { return c.clock.Now() }

// Advance moves Virtual Time forward by d and runs, at its own instant,
// everything that comes due on the way through the real Node Driver and the
// handlers: jobs enqueued for now or later, retries after their backoff,
// occurrences of Recurring Schedules, attempt timeouts, Sleeps that end,
// expired Leases, heartbeats of parked Attempts. It returns the new time.
// Advance(0) runs what is due now. A negative d fails the test.
func (c *Client) Advance(d time.Duration) time.Time {
	c.t.Helper()
	if d < 0 {
		c.t.Fatalf("jobtest: Advance(%v): Virtual Time never moves backwards", d)
		return c.Now()
	}
	return c.AdvanceTo(c.Now().Add(d))
}

// AdvanceTo moves Virtual Time to t as Advance does. A t before now fails
// the test.
func (c *Client) AdvanceTo(t time.Time) time.Time {
	c.t.Helper()
	if !c.usable("AdvanceTo") {
		return c.Now()
	}
	if t.Before(c.Now()) {
		c.t.Fatalf("jobtest: AdvanceTo(%s): before now (%s); Virtual Time never moves backwards",
			t.Format(time.RFC3339Nano), c.Now().Format(time.RFC3339Nano))
		return c.Now()
	}
	for {
		if !c.settle() {
			return c.Now()
		}
		next, ok := c.next(true)
		if !ok || next.After(t) {
			break
		}
		c.moveTo(next)
	}
	c.moveTo(t)
	c.settle()
	return c.Now()
}

// RunUntilIdle runs what is due now, then moves Virtual Time on from one
// instant something comes due to the next — retries, delayed jobs,
// Dependency releases, parked Attempts, expired Leases — until nothing is
// left that would run without the test acting: every job is terminal, or
// waits on something only the test can change (a paused Queue, a Queue no
// Worker Group serves, an Awaiting-Parent job whose parents wait). The
// occurrences of Recurring Schedules do not count as work left (they never
// end); jobs they already minted do. It returns the time it stopped at.
func (c *Client) RunUntilIdle() time.Time {
	c.t.Helper()
	if !c.usable("RunUntilIdle") {
		return c.Now()
	}
	for range c.limit {
		if !c.settle() {
			return c.Now()
		}
		next, ok := c.next(false)
		if !ok {
			return c.Now()
		}
		c.moveTo(next)
	}
	next, _ := c.next(false)
	c.t.Fatalf("jobtest: RunUntilIdle: still not idle after visiting %d instants (now %s, next %s): "+
		"work keeps coming due; use Advance to run a bounded stretch",
		c.limit, c.Now().Format(time.RFC3339), next.Format(time.RFC3339))
	return c.Now()
}

// Sleep pauses the calling handler for d of Virtual Time, or until ctx is
// done, and then returns context.Cause(ctx) if ctx is done and nil
// otherwise. It is how a handler, or a fake it calls, takes time under a
// Client: the Attempt parks, the test's Advance or RunUntilIdle goes on
// with everything else due meanwhile — heartbeats renew its Lease, other
// Attempts run, its attempt timeout cancels its context — and it resumes
// once Virtual Time has moved d on. Call it on the handler's own goroutine
// with the handler's context, or one derived from it; on
// context.WithoutCancel(ctx) the handler sleeps through its cancellation,
// as one that ignores its attempt timeout would. Outside a Client
// (production, a plain context) it waits on the host's timer, so a fake
// that uses it works there too.
func Sleep(ctx context.Context, d time.Duration) error { return shell.Sleep(ctx, d) }

// Close ends the Client as a Stop whose drain period is over: outcomes
// already in are reported, parked handlers are cancelled with
// backwave.ErrShutdown and have returned when Close does, and their Leases
// are relinquished. The store stays readable, for assertions after Close.
// The test's cleanup calls it; calling it again does nothing.
func (c *Client) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	var first error
	for _, m := range c.pumps {
		if err := m.Close(); err != nil && first == nil {
			first = err
		}
	}
	for _, w := range c.walks {
		if err := w.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// oweWalks tells every walk the Transition Log grew, when it did since they
// were last told.
func (c *Client) oweWalks() {
	if len(c.walks) == 0 {
		return
	}
	if n := c.due.transitions(); n != c.seen {
		c.seen = n
		for _, w := range c.walks {
			w.Owe()
		}
	}
}

func (c *Client) usable(what string) bool {
	c.t.Helper()
	if c.closed {
		c.t.Fatalf("jobtest: %s: the Client is closed", what)
		return false
	}
	return true
}

// moveTo sets Virtual Time to t, which is never before now.
func (c *Client) moveTo(t time.Time) {
	if err := c.clock.Set(t); err != nil {
		c.t.Fatalf("jobtest: %v", err) // a broken invariant of next: it never looks back
	}
}

// settle runs everything due at the current instant on every Pump: a Poll
// each (an early poll when no tick is due, which claims what came due and
// runs the maintenance beat when its interval has passed), then their
// ticks, timeouts, Sleeps and hints, and the Transition Observers' walk
// ticks and deliveries, until none does anything more. It fails the test
// and reports false if a handler exited without returning.
func (c *Client) settle() bool {
	c.t.Helper()
	for _, m := range c.pumps {
		if err := m.Poll(); err != nil {
			c.t.Fatalf("jobtest: %v", err)
			return false
		}
	}
	for {
		any := false
		for _, m := range c.pumps {
			did, err := m.Run()
			if err != nil {
				c.t.Fatalf("jobtest: %v", err)
				return false
			}
			any = any || did
		}
		c.oweWalks()
		for _, w := range c.walks {
			did, err := w.Run()
			if err != nil {
				c.t.Fatalf("jobtest: %v", err)
				return false
			}
			any = any || did
		}
		if !any {
			c.oweWalks()
			return true
		}
	}
}
