package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

// WalkPumpConfig configures a WalkPump: one Transition Observer's walk on
// one node. Its knobs have their defaults and checks where every machine's
// have them (package node's defaults table): the Walker's in
// node.WalkerConfig, the stop's in node.Pacing.
type WalkPumpConfig struct {
	// Walker configures the node.Walker the pump obeys.
	Walker node.WalkerConfig
	// Worker is the node's holder identity for the walk's Lease; required.
	Worker job.WorkerID
	// Store serves the walk's store calls; required.
	Store store.Observers
	// Deliver is the host's callback: it runs on its own goroutine, one
	// entry at a time. An error or a panic (recovered) is a failed
	// delivery: logged, and delivered again after a backoff. Required.
	Deliver func(ctx context.Context, t store.ObservedTransition) error
	// Clock stamps the Walker's events (WallClock if nil).
	Clock vtime.Clock
	// DrainTimeout is how long Stop waits for a delivery in flight (its
	// context is cancelled at once) before the pump exits without
	// releasing the walk, whose Lease then lapses; as for a Pump, the
	// drain is timed from the stop and its end cancels a store call still
	// in flight (node.DefaultDrainTimeout if zero, as a Pump's).
	DrainTimeout time.Duration
	// RelinquishTimeout bounds the store call that releases a stopping
	// walk (node.DefaultRelinquishTimeout if zero, as a Pump's). Every
	// other store call's deadline is a third of the walk's Lease, as for a
	// Pump's Driver (node.Pacing.CallTimeout).
	RelinquishTimeout time.Duration
	// Logger receives the pump's logs (slog.Default() if nil).
	Logger *slog.Logger
}

// ErrObserverStopping is the cause a delivery's context is cancelled with
// when its node stops.
var ErrObserverStopping = errors.New("backwave: transition observer stopping")

// WalkPump is the Shell of one node.Walker: it runs the Walker on the one
// Shell loop a Pump runs its Driver on (runner.go), with the walk's ticker
// as its one periodic event: its store calls through node.Caller under the
// same deadline rule, the same stop and drain, each Deliver on a goroutine
// of its own, its result fed back. It holds no judgment of its own.
type WalkPump struct {
	runner
	cfg    WalkPumpConfig
	walker *node.Walker

	// Delivery results waiting for the loop (at most one: the Walker has
	// one delivery out at a time).
	doneMu  sync.Mutex
	done    []node.Delivered
	started bool
	mu      sync.Mutex

	deliverCtx    context.Context
	deliverCancel context.CancelCauseFunc

	manual *WalkManual // set when the walk is driven by hand
}

// NewWalkPump checks cfg and returns a pump that is not yet started. Its
// errors wrap ErrInvalidConfig.
func NewWalkPump(cfg WalkPumpConfig) (*WalkPump, error) {
	switch {
	case cfg.Worker == "":
		return nil, fmt.Errorf("%w: observer %q: no worker id", ErrInvalidConfig, cfg.Walker.Observer)
	case cfg.Store == nil:
		return nil, fmt.Errorf("%w: observer %q: no store", ErrInvalidConfig, cfg.Walker.Observer)
	case cfg.Deliver == nil:
		return nil, fmt.Errorf("%w: observer %q: no callback", ErrInvalidConfig, cfg.Walker.Observer)
	}
	w, err := node.NewWalker(cfg.Walker)
	if err != nil {
		return nil, err
	}
	cfg.Walker = w.Config()
	lease := cfg.Walker.LeaseDuration
	pacing := node.Pacing{DrainTimeout: cfg.DrainTimeout, RelinquishTimeout: cfg.RelinquishTimeout}.WithDefaults(lease)
	if err := pacing.Validate(lease); err != nil {
		return nil, fmt.Errorf("observer %q: %w", cfg.Walker.Observer, err)
	}
	cfg.DrainTimeout, cfg.RelinquishTimeout = pacing.DrainTimeout, pacing.RelinquishTimeout
	if cfg.Clock == nil {
		cfg.Clock = WallClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &WalkPump{cfg: cfg, walker: w}
	p.runner = newRunner(loop{
		m:      w,
		caller: node.Caller{Worker: cfg.Worker, Observers: cfg.Store},
		clock:  cfg.Clock,
		pacing: pacing,
		log:    cfg.Logger.With("observer", cfg.Walker.Observer, "worker", cfg.Worker),
		host:   p,
	}, p, pacing.DrainTimeout, pacing.RelinquishTimeout)
	return p, nil
}

// Config returns the configuration the pump runs with, defaults filled.
func (p *WalkPump) Config() WalkPumpConfig { return p.cfg }

// Start starts the pump's goroutine and returns. ctx's values reach every
// delivery; cancelling it stops the pump as Stop does.
func (p *WalkPump) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("shell: walk pump already started")
	}
	p.started = true
	p.begin(ctx)
	p.start(ctx, p.beginStop)
	return nil
}

// begin sets the contexts of the deliveries and of the store calls.
func (p *WalkPump) begin(ctx context.Context) {
	p.runner.begin(ctx)
	p.deliverCtx, p.deliverCancel = context.WithCancelCause(p.base)
}

// Stop stops the walk: a delivery in flight has its context cancelled
// (cause ErrObserverStopping) and DrainTimeout to return, then the cursor
// moves past what was delivered and the walk's Lease is released. A
// delivery still running after DrainTimeout is abandoned: the pump exits
// without releasing and the Lease lapses. Stop returns once the pump
// exited, or with ctx's error if ctx is done first.
func (p *WalkPump) Stop(ctx context.Context) error {
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if !started {
		return nil
	}
	p.beginStop()
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shell: stop observer %q: %w", p.cfg.Walker.Observer, ctx.Err())
	}
}

// Done is closed when the pump's goroutine has exited.
func (p *WalkPump) Done() <-chan struct{} { return p.exited }

// ticks returns the walk's one periodic event, which also starts it
// (runHost).
func (p *WalkPump) ticks() []tick {
	return []tick{{every: p.walker.Config().Tick(), fire: func(now time.Time) { p.step(node.WalkTick{Now: now}) }}}
}

// collect feeds the Walker the deliveries that returned (runHost).
func (p *WalkPump) collect() {
	p.doneMu.Lock()
	batch := p.done
	p.done = nil
	p.doneMu.Unlock()
	for _, d := range batch {
		d.Now = p.now()
		p.step(d)
	}
}

// stopping cancels the delivery in flight, if any (runHost).
func (p *WalkPump) stopping() { p.deliverCancel(ErrObserverStopping) }

// ending logs a walk whose delivery outlived the drain (runHost).
func (p *WalkPump) ending(why string) {
	if why != "drained" {
		p.log.Warn("transition observer: a delivery outlived the drain; the walk's Lease is left to lapse", "why", why)
	}
}

// exit cancels the delivery in flight, if any (runHost).
func (p *WalkPump) exit() { p.deliverCancel(ErrObserverStopping) }

// replied logs a failed store call of the walk (a stale Lease is the
// Walker's to handle: the walk changed hands).
func (p *WalkPump) replied(r node.Reply, cut bool, _ time.Time) {
	if r.Err != nil && !cut && !errors.Is(r.Err, store.ErrStaleLease) {
		p.log.Warn("transition observer: store call failed", "command", r.Command.String(), "err", r.Err)
	}
	if _, ok := r.Command.(node.WalkClaim); ok && p.manual != nil {
		p.manual.claims++
	}
}

// carry carries out a Deliver: on a goroutine of its own, whose Delivered
// comes back through the loop goroutine, or, driven by hand, at once.
func (p *WalkPump) carry(c node.Command) node.Event {
	d, ok := c.(node.Deliver)
	if !ok {
		panic(fmt.Sprintf("shell: walk pump: unknown command %T", c))
	}
	if p.manual != nil {
		failed := p.deliver(d.Transition)
		return node.Delivered{Now: p.now(), Position: d.Transition.Position, Failed: failed}
	}
	go func() {
		failed := p.deliver(d.Transition)
		p.doneMu.Lock()
		p.done = append(p.done, node.Delivered{Position: d.Transition.Position, Failed: failed})
		p.doneMu.Unlock()
		p.signal() // abandoned past the drain: nobody collects it
	}()
	return nil
}

// deliver runs the callback for one entry and reports whether it failed
// (an error, or a panic, recovered).
func (p *WalkPump) deliver(t store.ObservedTransition) (failed bool) {
	failed = true
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("transition observer: callback panicked; delivering again later",
				"job", t.Job, "seq", t.Position.Seq, "state", t.State, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	if err := p.cfg.Deliver(p.deliverCtx, t); err != nil {
		p.log.Warn("transition observer: callback failed; delivering again later",
			"job", t.Job, "seq", t.Position.Seq, "state", t.State, "err", err)
		return true
	}
	return false
}
