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
// one node.
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
	// releasing the walk, whose Lease then lapses; 0 means 10 s.
	DrainTimeout time.Duration
	// CallTimeout bounds each store call; 0 means 30 s.
	CallTimeout time.Duration
	// Logger receives the pump's logs (slog.Default() if nil).
	Logger *slog.Logger
}

// ErrObserverStopping is the cause a delivery's context is cancelled with
// when its node stops.
var ErrObserverStopping = errors.New("backwave: transition observer stopping")

// WalkPump is the Shell of one node.Walker: a goroutine with the walk's
// ticker that carries out the Walker's commands — its store calls through
// node.Caller, each Deliver on a goroutine of its own — and feeds their
// results back. It holds no judgment of its own.
type WalkPump struct {
	cfg    WalkPumpConfig
	walker *node.Walker
	caller node.Caller
	log    *slog.Logger

	done    chan node.Delivered
	stopCh  chan struct{}
	exited  chan struct{}
	stop    sync.Once
	started bool
	mu      sync.Mutex

	deliverCtx    context.Context
	deliverCancel context.CancelCauseFunc
}

// NewWalkPump checks cfg and returns a pump that is not yet started.
func NewWalkPump(cfg WalkPumpConfig) (*WalkPump, error) {
	switch {
	case cfg.Worker == "":
		return nil, fmt.Errorf("%w: observer %q: no worker id", ErrInvalidConfig, cfg.Walker.Observer)
	case cfg.Store == nil:
		return nil, fmt.Errorf("%w: observer %q: no store", ErrInvalidConfig, cfg.Walker.Observer)
	case cfg.Deliver == nil:
		return nil, fmt.Errorf("%w: observer %q: no callback", ErrInvalidConfig, cfg.Walker.Observer)
	case cfg.DrainTimeout < 0 || cfg.CallTimeout < 0:
		return nil, fmt.Errorf("%w: observer %q: negative drain or call timeout", ErrInvalidConfig, cfg.Walker.Observer)
	}
	w, err := node.NewWalker(cfg.Walker)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.Clock == nil {
		cfg.Clock = WallClock{}
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = 10 * time.Second
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &WalkPump{
		cfg:    cfg,
		walker: w,
		caller: node.Caller{Worker: cfg.Worker, Observers: cfg.Store},
		log:    cfg.Logger.With("observer", cfg.Walker.Observer, "worker", cfg.Worker),
		done:   make(chan node.Delivered, 1),
		stopCh: make(chan struct{}),
		exited: make(chan struct{}),
	}, nil
}

// Start starts the pump's goroutine and returns. ctx's values reach every
// delivery; cancelling it stops the pump as Stop does.
func (p *WalkPump) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("shell: walk pump already started")
	}
	p.started = true
	p.deliverCtx, p.deliverCancel = context.WithCancelCause(context.WithoutCancel(ctx))
	context.AfterFunc(ctx, p.beginStop)
	go p.loop(context.WithoutCancel(ctx))
	return nil
}

func (p *WalkPump) beginStop() { p.stop.Do(func() { close(p.stopCh) }) }

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

func (p *WalkPump) now() time.Time { return p.cfg.Clock.Now() }

func (p *WalkPump) loop(ctx context.Context) {
	defer close(p.exited)
	defer p.deliverCancel(ErrObserverStopping)
	ticker := time.NewTicker(p.walker.Config().Tick())
	defer ticker.Stop()
	stopCh := p.stopCh
	var drain <-chan time.Time
	p.step(ctx, node.WalkTick{Now: p.now()})
	for !p.walker.Stopped() {
		select {
		case <-ticker.C:
			p.step(ctx, node.WalkTick{Now: p.now()})
		case d := <-p.done:
			d.Now = p.now()
			p.step(ctx, d)
		case <-stopCh:
			stopCh = nil
			p.deliverCancel(ErrObserverStopping)
			drain = time.After(p.cfg.DrainTimeout)
			p.step(ctx, node.Stop{Now: p.now()})
		case <-drain:
			p.log.Warn("transition observer: a delivery outlived the drain; the walk's Lease is left to lapse")
			return
		}
	}
}

// step feeds ev to the Walker and carries out its commands in order, each
// store call's result fed straight back.
func (p *WalkPump) step(ctx context.Context, ev node.Event) {
	cmds := p.walker.Step(ev, nil)
	for i := 0; i < len(cmds); i++ {
		switch c := cmds[i].(type) {
		case node.StoreCommand:
			cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
			r := p.caller.Call(cctx, c)
			cancel()
			if r.Err != nil && !errors.Is(r.Err, store.ErrStaleLease) {
				p.log.Warn("transition observer: store call failed", "command", c.String(), "err", r.Err)
			}
			cmds = p.walker.Step(r.Event(p.now()), cmds)
		case node.Deliver:
			go p.deliver(c.Transition)
		default:
			panic(fmt.Sprintf("shell: walk pump: unknown command %T", c))
		}
	}
}

// deliver runs the callback for one entry and reports it.
func (p *WalkPump) deliver(t store.ObservedTransition) {
	failed := true
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("transition observer: callback panicked; delivering again later",
				"job", t.Job, "seq", t.Position.Seq, "state", t.State, "panic", r, "stack", string(debug.Stack()))
		}
		select {
		case p.done <- node.Delivered{Position: t.Position, Failed: failed}:
		case <-p.exited: // abandoned past the drain
		}
	}()
	if err := p.cfg.Deliver(p.deliverCtx, t); err != nil {
		p.log.Warn("transition observer: callback failed; delivering again later",
			"job", t.Job, "seq", t.Position.Seq, "state", t.State, "err", err)
		return
	}
	failed = false
}
