package shell

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// Pump drives one node.Driver against a store.Worker: one loop goroutine, one
// store round trip in flight at a time, handlers on their own goroutines.
// Start it once and Stop it once; its methods are safe for concurrent use.
type Pump struct {
	// runner runs the Driver on the one Shell loop (runner.go, loop.go),
	// on its goroutine.
	runner
	cfg    Config
	drv    *node.Driver
	serves map[string]bool

	tasks chan task // loop → idle handler goroutines; closed when the loop exits

	// Handler results waiting for the loop, in the order they finished.
	doneMu sync.Mutex
	done   []finished
	spare  []finished // owned by the loop: the next done buffer

	// Handler goroutines waiting for an Attempt.
	idle atomic.Int32

	mu      sync.Mutex
	started bool
	stopped bool

	// Set by Start before the loop runs, read-only afterwards.
	handlerCtx  context.Context
	unsubscribe func()

	// Owned by the loop goroutine.
	attempts map[job.Lease]*attempt
	peak     int // most Attempts in flight since the last heartbeat tick
	zones    map[string]*time.Location

	manual *Manual // set when the Pump is driven by hand (manual.go)
	// running counts the Attempts the Driver counts as executing: started
	// and neither finished nor abandoned.
	running int
	// handedBack keeps the Attempts abandoned at the end of the drain
	// until the Relinquish that follows answers, for the Observer only.
	handedBack map[job.Lease]*attempt
	// unreturned is the error of a Relinquish that failed, the Leases it
	// named left to lapse; Stop returns it. Written by the loop, read by
	// Stop after the loop has exited.
	unreturned error

	stats stats
}

// attempt is the Shell's side of one Attempt: its handler's cancel func and,
// once the handler returned, the opaque data waiting for the Report.
type attempt struct {
	cancel   context.CancelCauseFunc
	ctx      attemptContext // the handler's context
	queue    string
	wireName string
	done     bool
	// progress is where the handler reports how far it got.
	progress Progress
	// cursor is where the handler saves its job's Cursor.
	cursor Cursor
	detail string
	output []byte
	tags   []job.Tag
}

// task is one Attempt handed to a handler goroutine.
type task struct {
	ctx     context.Context
	job     job.Job
	timeout time.Duration // the Attempt's timeout (zero: none)
}

// finished carries a handler's result to the loop.
type finished struct {
	lease  job.Lease
	result Result
}

// New returns a Pump for cfg after filling its defaults and validating it
// (errors wrap ErrInvalidConfig).
func New(cfg Config) (*Pump, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	drv, err := node.New(cfg.Driver)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	p := &Pump{
		cfg:      cfg,
		drv:      drv,
		serves:   make(map[string]bool),
		tasks:    make(chan task),
		attempts: make(map[job.Lease]*attempt),
		zones:    make(map[string]*time.Location),
	}
	p.stats.free.Store(int64(cfg.Driver.PoolSize))
	if cfg.Observer != nil {
		p.handedBack = make(map[job.Lease]*attempt)
	}
	for _, q := range cfg.Driver.Policy.QueueNames() {
		p.serves[q] = true
	}
	p.runner = newRunner(loop{
		m: drv,
		caller: node.Caller{
			Worker:    cfg.Driver.Worker,
			Store:     cfg.Store,
			Schedules: cfg.Schedules,
			Retention: cfg.Retention,
			Fleet:     cfg.Fleet,
			Detail:    p.detail,
			Progress:  p.progress,
			Cursors:   p.cursors,
			Zone:      p.zone,
		},
		clock:    cfg.Clock,
		pacing:   cfg.Pacing,
		log:      cfg.Logger.With("worker", string(cfg.Driver.Worker)),
		host:     p,
		observer: cfg.Observer,
	}, p, cfg.DrainTimeout, cfg.RelinquishTimeout)
	return p, nil
}

// Worker returns the lease-holder identity of this Pump.
func (p *Pump) Worker() job.WorkerID { return p.cfg.Driver.Worker }

// Start starts the loop and returns at once. Values of ctx reach every store
// call and handler; its cancellation begins a graceful stop, as Stop does.
// A Pump starts once.
func (p *Pump) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.started:
		return errors.New("shell: pump already started")
	case p.stopped:
		return errors.New("shell: pump was stopped before it started")
	}
	p.started = true
	p.stats.mu.Lock()
	p.stats.since = p.now()
	p.stats.mu.Unlock()
	p.handlerCtx = context.WithoutCancel(ctx)
	if p.cfg.Hints != nil {
		p.unsubscribe = p.cfg.Hints.SubscribeHints(func(queue string) {
			if p.serves[queue] {
				p.Wake()
			}
		})
	}
	p.log.Info("pump started", "queues", p.cfg.Driver.Policy.QueueNames(), "pool_size", p.cfg.Driver.PoolSize)
	p.start(ctx, p.beginStop)
	return nil
}

// Stop stops the Pump gracefully and returns once its loop has exited: the
// Driver claims nothing more, running handlers get DrainTimeout to finish
// (their outcomes are reported as outside a drain: coalesced, by the next
// poll or heartbeat, a full batch, or the last handler's return, so a burst
// of them is one report), then the rest are cancelled with
// ErrShutdown and their Leases relinquished, best effort within
// RelinquishTimeout. If ctx is done first, the drain is cut short the same
// way and Stop returns ctx's error. If the store refused the hand-back,
// Stop returns an error wrapping the store's, the Leases left to lapse
// (their Attempts then count as failed ones). Stop on a Pump that never
// started returns nil.
//
// A store that never answers cannot hold Stop back: Stop returns within
// DrainTimeout plus RelinquishTimeout of the start of the stop (or within
// RelinquishTimeout of ctx being done), provided the store's calls return
// once their context is done, as the adapters' do. The drain period is
// timed from here, not from the loop, and its end cancels any store call
// still in flight.
func (p *Pump) Stop(ctx context.Context) error {
	p.mu.Lock()
	p.stopped = true
	started := p.started
	p.mu.Unlock()
	if !started {
		return nil
	}
	p.beginStop()
	unregister := context.AfterFunc(ctx, p.abort)
	<-p.exited
	if !unregister() && ctx.Err() != nil {
		return fmt.Errorf("shell: stop %s: %w", p.cfg.Driver.Worker, errors.Join(ctx.Err(), p.unreturned))
	}
	if p.unreturned != nil {
		return fmt.Errorf("shell: stop %s: %w", p.cfg.Driver.Worker, p.unreturned)
	}
	return nil
}

// Done is closed when the loop has exited.
func (p *Pump) Done() <-chan struct{} { return p.exited }

// beginStop begins the graceful stop, once (runner.beginStop), and shows
// it in the Stats at once.
func (p *Pump) beginStop() {
	p.stats.stopping.Store(true)
	p.runner.beginStop()
}

// ticks returns the Pump's periodic events: the poll, which also starts
// the Driver, and the heartbeat, after which idle handler goroutines the
// last interval did not need retire (runHost).
func (p *Pump) ticks() []tick {
	return []tick{
		{every: p.cfg.PollInterval, fire: func(now time.Time) { p.step(node.Poll{Now: now}) }},
		{every: p.cfg.HeartbeatInterval, fire: func(now time.Time) {
			p.step(node.Heartbeat{Now: now})
			p.retireIdle()
		}},
	}
}

// stopping logs the start of the drain (runHost).
func (p *Pump) stopping() {
	p.log.Info("pump stopping: draining", "executing", len(p.drv.Executing()), "drain_timeout", p.cfg.DrainTimeout)
}

// ending logs why the loop ends (runHost).
func (p *Pump) ending(why string) {
	if why == "drained" {
		p.log.Info("pump stopped: drained")
		return
	}
	p.log.Info("pump stopping: "+why, "executing", len(p.drv.Executing()))
}

// exit ends the handler goroutines and cancels every Attempt still out
// once the loop has exited (runHost).
func (p *Pump) exit() {
	close(p.tasks) // idle handler goroutines exit; busy ones after their Attempt
	if p.unsubscribe != nil {
		p.unsubscribe()
	}
	for l, a := range p.attempts {
		a.cancel(ErrShutdown)
		delete(p.attempts, l)
	}
}

// step feeds one event to the Driver on the Shell loop (loop.go), which
// carries out every command it yields, and then publishes the Pump's Stats
// (runHost).
func (p *Pump) step(ev node.Event) {
	p.loop.step(ev)
	p.publish()
}

// queueResult queues a handler's result for the loop and wakes it; a wake
// already pending covers this result too.
func (p *Pump) queueResult(f finished) {
	p.doneMu.Lock()
	p.done = append(p.done, f)
	p.doneMu.Unlock()
	p.signal()
}

// collect takes every waiting handler result into the loop, in the order
// they finished: a burst of results costs the loop one wake-up, not one
// hand-off per handler (runHost).
func (p *Pump) collect() {
	p.doneMu.Lock()
	batch := p.done
	p.done = p.spare
	p.doneMu.Unlock()
	for _, f := range batch {
		p.finish(f)
	}
	// The two buffers take turns, so a steady stream of results does not
	// grow a new slice per burst.
	clear(batch)
	p.spare = batch[:0]
}

// finish takes a handler's result into the loop.
func (p *Pump) finish(f finished) {
	a := p.attempts[f.lease]
	if a == nil || a.done {
		return // abandoned: its result is dropped
	}
	a.done = true
	p.running--
	a.cancel(nil) // release the context's resources
	r := f.result
	if r.Result == 0 {
		r.Result = core.ResultFailed
		if r.FailureDetail == "" {
			r.FailureDetail = "executor returned no result"
		}
	}
	if r.Result == core.ResultSnoozed {
		if err := core.CheckSnoozeDelay(r.Snooze); err != nil {
			// Bad input from the handler: a failed Attempt that says so,
			// never a silent default delay.
			r.Result, r.FailureDetail = core.ResultFailed, "invalid snooze: "+err.Error()
		}
	}
	if !p.cfg.FailureDetailOff && r.FailureDetail != "" {
		a.detail = TruncateDetail(r.FailureDetail, p.cfg.FailureDetailLimit)
	}
	a.output = r.Output
	for _, t := range r.TagDelta {
		if err := t.Validate(); err != nil {
			p.log.Warn("dropping invalid tag from outcome", p.attrs(f.lease, a, "error", err)...)
			continue
		}
		a.tags = append(a.tags, t)
	}
	p.step(node.JobDone{Now: p.now(), Lease: f.lease, Result: r.Result, Snooze: r.Snooze})
}

// attrs returns the canonical log keys of one Attempt followed by extra.
func (p *Pump) attrs(l job.Lease, a *attempt, extra ...any) []any {
	out := []any{"job", int64(l.ID), "attempt", int(l.Attempt)}
	if a != nil {
		out = append(out, "queue", a.queue, "wire_name", a.wireName)
	}
	return append(out, extra...)
}
