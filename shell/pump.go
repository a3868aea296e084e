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
	// loop runs the Driver: the one Shell loop body (loop.go). Owned by
	// the loop goroutine.
	loop
	cfg    Config
	drv    *node.Driver
	serves map[string]bool

	wake    chan struct{} // the single pending wake slot
	tasks   chan task     // loop → idle handler goroutines; closed when the loop exits
	doneCh  chan struct{} // handler goroutines → loop: results are waiting
	stopCh  chan struct{} // closed when the stop begins (Stop or Start's context)
	drainCh chan struct{} // closed when the drain period is over
	abortCh chan struct{} // closed when a Stop's context is done
	exited  chan struct{} // closed when the loop has exited

	// Handler results waiting for the loop, in the order they finished.
	doneMu sync.Mutex
	done   []finished
	spare  []finished // owned by the loop: the next done buffer

	// Handler goroutines waiting for an Attempt.
	idle atomic.Int32

	mu         sync.Mutex
	started    bool
	stopped    bool
	drainTimer *time.Timer // ends the drain period; set when the stop begins
	stopOnce   sync.Once
	drainOnce  sync.Once
	abortOnce  sync.Once

	// Set by Start before the loop runs, read-only afterwards.
	handlerCtx  context.Context
	ioCancel    context.CancelCauseFunc // cancels ioCtx, and any store call in flight
	unwatch     func() bool             // stops watching Start's context
	unsubscribe func()

	// Owned by the loop goroutine.
	// repoll times the one pending node.PollAfter; repollC is its channel
	// while one is pending, nil otherwise.
	repoll   *time.Timer
	repollC  <-chan time.Time
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
	detail   string
	output   []byte
	tags     []job.Tag
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
		wake:     make(chan struct{}, 1),
		tasks:    make(chan task),
		doneCh:   make(chan struct{}, 1),
		stopCh:   make(chan struct{}),
		drainCh:  make(chan struct{}),
		abortCh:  make(chan struct{}),
		exited:   make(chan struct{}),
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
	p.loop = loop{
		m: drv,
		caller: node.Caller{
			Worker:    cfg.Driver.Worker,
			Store:     cfg.Store,
			Schedules: cfg.Schedules,
			Retention: cfg.Retention,
			Fleet:     cfg.Fleet,
			Detail:    p.detail,
			Progress:  p.progress,
			Zone:      p.zone,
		},
		clock:    cfg.Clock,
		pacing:   cfg.Pacing,
		log:      cfg.Logger.With("worker", string(cfg.Driver.Worker)),
		host:     p,
		observer: cfg.Observer,
	}
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
	base := context.WithoutCancel(ctx)
	p.handlerCtx = base
	p.ioCtx, p.ioCancel = context.WithCancelCause(base)
	p.unwatch = context.AfterFunc(ctx, p.beginStop)
	if p.cfg.Hints != nil {
		p.unsubscribe = p.cfg.Hints.SubscribeHints(func(queue string) {
			if p.serves[queue] {
				p.Wake()
			}
		})
	}
	go p.serve()
	return nil
}

// Wake asks for an earlier poll: a Wake-Up Hint. It never blocks; hints
// coalesce in one pending slot and a full slot drops the hint.
func (p *Pump) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Stop stops the Pump gracefully and returns once its loop has exited: the
// Driver claims nothing more, running handlers get DrainTimeout to finish
// (their outcomes are reported as outside a drain: coalesced, by the next
// poll or heartbeat, a full batch, or the last handler's return, so a burst
// of them is one report), then the rest are cancelled with
// ErrShutdown and their Leases relinquished, best effort within
// RelinquishTimeout. If ctx is done first, the drain is cut short the same
// way and Stop returns ctx's error. Stop on a Pump that never started
// returns nil.
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
		return fmt.Errorf("shell: stop %s: %w", p.cfg.Driver.Worker, ctx.Err())
	}
	return nil
}

// Done is closed when the loop has exited.
func (p *Pump) Done() <-chan struct{} { return p.exited }

// beginStop begins the graceful stop, once: it tells the loop and starts the
// drain period's timer here, outside the loop, so a loop blocked in a store
// call cannot push the end of the drain back.
func (p *Pump) beginStop() {
	p.stopOnce.Do(func() {
		p.stats.stopping.Store(true)
		close(p.stopCh)
		p.mu.Lock()
		p.drainTimer = time.AfterFunc(p.cfg.DrainTimeout, p.endDrain)
		p.mu.Unlock()
	})
}

// endDrain ends the drain period: it tells the loop, and cancels the store
// call in flight, if any, so the loop reaches its final step at once.
func (p *Pump) endDrain() {
	p.drainOnce.Do(func() { close(p.drainCh) })
	p.ioCancel(errDrainOver)
}

// abort cuts the stop short when a Stop's context is done, cancelling the
// store call in flight as endDrain does.
func (p *Pump) abort() {
	p.abortOnce.Do(func() { close(p.abortCh) })
	p.ioCancel(errStopAborted)
}

// serve is the Pump's only goroutine that touches the Driver.
func (p *Pump) serve() {
	defer p.exit()
	poll := time.NewTicker(p.cfg.PollInterval)
	defer poll.Stop()
	heartbeat := time.NewTicker(p.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	stopCh := p.stopCh

	p.log.Info("pump started", "queues", p.cfg.Driver.Policy.QueueNames(), "pool_size", p.cfg.Driver.PoolSize)
	p.step(node.Poll{Now: p.now()})
	for {
		select {
		case <-poll.C:
			p.step(node.Poll{Now: p.now()})
		case <-heartbeat.C:
			p.step(node.Heartbeat{Now: p.now()})
			p.retireIdle()
		case <-p.wake:
			p.step(node.Hint{Now: p.now()})
		case <-p.repollC:
			p.repollC = nil
			p.step(node.Poll{Now: p.now()})
		case <-p.doneCh:
			p.finishAll()
		case <-stopCh:
			stopCh = nil
			p.log.Info("pump stopping: draining", "executing", len(p.drv.Executing()), "drain_timeout", p.cfg.DrainTimeout)
			p.step(node.Stop{Now: p.now()})
		case <-p.drainCh:
			p.final("drain timeout")
			return
		case <-p.abortCh:
			p.final("stop context done")
			return
		}
		if p.drv.Drained() {
			p.log.Info("pump stopped: drained")
			return
		}
	}
}

// final feeds DrainTimeout: the Driver flushes, abandons what still runs and
// relinquishes it. Its store calls share a fresh context of
// RelinquishTimeout, so a cancelled Stop context still lets the hand-back be
// tried, and the whole step never blocks exit for longer than
// RelinquishTimeout.
func (p *Pump) final(why string) {
	p.log.Info("pump stopping: "+why, "executing", len(p.drv.Executing()))
	ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(p.handlerCtx), p.cfg.RelinquishTimeout, errFinalOver)
	defer cancel()
	p.ioCtx = ctx
	p.step(node.DrainTimeout{Now: p.now()})
}

func (p *Pump) exit() {
	close(p.exited)
	close(p.tasks) // idle handler goroutines exit; busy ones after their Attempt
	if p.repoll != nil {
		p.repoll.Stop()
	}
	p.unwatch()
	p.mu.Lock()
	if p.drainTimer != nil {
		p.drainTimer.Stop()
	}
	p.mu.Unlock()
	if p.unsubscribe != nil {
		p.unsubscribe()
	}
	for l, a := range p.attempts {
		a.cancel(ErrShutdown)
		delete(p.attempts, l)
	}
	p.ioCancel(context.Canceled)
}

// step feeds one event to the Driver on the Shell loop (loop.go), which
// carries out every command it yields, and then publishes the Pump's Stats.
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
	select {
	case p.doneCh <- struct{}{}:
	default:
	}
}

// finishAll takes every waiting handler result into the loop, in the order
// they finished: a burst of results costs the loop one wake-up, not one
// hand-off per handler.
func (p *Pump) finishAll() {
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
	p.step(node.JobDone{Now: p.now(), Lease: f.lease, Result: r.Result})
}

// attrs returns the canonical log keys of one Attempt followed by extra.
func (p *Pump) attrs(l job.Lease, a *attempt, extra ...any) []any {
	out := []any{"job", int64(l.ID), "attempt", int(l.Attempt)}
	if a != nil {
		out = append(out, "queue", a.queue, "wire_name", a.wireName)
	}
	return append(out, extra...)
}
