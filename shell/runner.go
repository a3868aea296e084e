package shell

import (
	"context"
	"sync"
	"time"

	"github.com/backwave/backwave/node"
)

// runner is the one Shell loop that owns a goroutine: it drives any
// node.Machine — a Pump's Driver, a WalkPump's Walker — on the loop body
// (loop.go), feeding it the host's periodic events, Wake-Up Hints, the one
// pending one-shot timer (a Driver's node.PollAfter), the host's results,
// and the stop: Stop when it begins, DrainTimeout when its drain period is
// over (or the Stop's context is done, for a host that aborts), under a
// fresh context of RelinquishTimeout. It exits once the machine has
// Finished, or right after DrainTimeout.
//
// What differs between hosts sits behind runHost: the periodic events, how
// results come back from the host's goroutines (handlers, deliveries), and
// what the host logs and cleans up. A machine driven by hand (Manual,
// WalkManual) runs on the same loop body without a runner.
type runner struct {
	loop
	run runHost

	wake    chan struct{} // the single pending wake slot (Wake)
	results chan struct{} // the host's results are waiting (signal)
	stopCh  chan struct{} // closed when the stop begins
	drainCh chan struct{} // closed when the drain period is over
	abortCh chan struct{} // closed when a Stop's context is done (abort)
	exited  chan struct{} // closed when the loop has exited

	drainTimeout, relinquishTimeout time.Duration

	stopOnce, drainOnce, abortOnce sync.Once
	timerMu                        sync.Mutex
	drainTimer                     *time.Timer // ends the drain period; set when the stop begins

	// Set by begin before the loop runs, read-only afterwards.
	base     context.Context         // the host's context, never cancelled
	ioCancel context.CancelCauseFunc // cancels ioCtx, and any store call in flight
	unwatch  func() bool             // stops watching Start's context

	// Owned by the loop goroutine: the one pending one-shot timer; afterC
	// is its channel while armed, nil otherwise.
	after   *time.Timer
	afterC  <-chan time.Time
	afterEv func(now time.Time) node.Event
}

// runHost is what a runner's host supplies: the parts of its Shell loop
// that are its own.
type runHost interface {
	host
	// step feeds ev to the machine on the loop body, with what the host
	// does after every step (a Pump publishes its Stats).
	step(ev node.Event)
	// ticks returns the host's periodic events (at most maxTicks); the
	// first one's also starts the machine.
	ticks() []tick
	// collect takes the results the host's goroutines left (signal) into
	// the loop.
	collect()
	// stopping is told the stop begins, before the machine gets Stop.
	stopping()
	// ending is told why the loop ends: "drained" (the machine Finished),
	// or the reason DrainTimeout is fed next.
	ending(why string)
	// exit cleans up after the loop, before Done is closed.
	exit()
}

// tick is one periodic event of a host: fire runs on the loop goroutine
// every interval.
type tick struct {
	every time.Duration
	fire  func(now time.Time)
}

// maxTicks is how many periodic events a runner selects over.
const maxTicks = 2

// newRunner returns a runner of m for h whose stop waits drain and whose
// final step gets relinquish.
func newRunner(l loop, h runHost, drain, relinquish time.Duration) runner {
	return runner{
		loop:              l,
		run:               h,
		wake:              make(chan struct{}, 1),
		results:           make(chan struct{}, 1),
		stopCh:            make(chan struct{}),
		drainCh:           make(chan struct{}),
		abortCh:           make(chan struct{}),
		exited:            make(chan struct{}),
		drainTimeout:      drain,
		relinquishTimeout: relinquish,
	}
}

// begin sets the contexts of the store calls from ctx, whose values they
// keep and whose cancellation they do not.
func (r *runner) begin(ctx context.Context) {
	r.base = context.WithoutCancel(ctx)
	r.ioCtx, r.ioCancel = context.WithCancelCause(r.base)
}

// start begins the loop goroutine; ctx's cancellation calls stop, which
// begins the stop (beginStop, with what the host adds).
func (r *runner) start(ctx context.Context, stop func()) {
	r.begin(ctx)
	r.unwatch = context.AfterFunc(ctx, stop)
	go r.serve()
}

// Wake asks for an earlier poll: a Wake-Up Hint. It never blocks; hints
// coalesce in one pending slot and a full slot drops the hint.
func (r *runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// signal wakes the loop to collect the host's results; a signal already
// pending covers these too.
func (r *runner) signal() {
	select {
	case r.results <- struct{}{}:
	default:
	}
}

// arm sets the one pending one-shot timer to feed ev's event after d,
// replacing any pending one.
func (r *runner) arm(d time.Duration, ev func(now time.Time) node.Event) {
	if r.after == nil {
		r.after = time.NewTimer(d)
	} else {
		r.after.Reset(d)
	}
	r.afterC, r.afterEv = r.after.C, ev
}

// beginStop begins the stop, once: it tells the loop and starts the drain
// period's timer here, outside the loop, so a loop blocked in a store call
// cannot push the end of the drain back.
func (r *runner) beginStop() {
	r.stopOnce.Do(func() {
		close(r.stopCh)
		r.timerMu.Lock()
		r.drainTimer = time.AfterFunc(r.drainTimeout, r.endDrain)
		r.timerMu.Unlock()
	})
}

// endDrain ends the drain period: it tells the loop, and cancels the store
// call in flight, if any, so the loop reaches its final step at once.
func (r *runner) endDrain() {
	r.drainOnce.Do(func() { close(r.drainCh) })
	r.ioCancel(errDrainOver)
}

// abort cuts the stop short (a Stop's context is done), cancelling the
// store call in flight as endDrain does.
func (r *runner) abort() {
	r.abortOnce.Do(func() { close(r.abortCh) })
	r.ioCancel(errStopAborted)
}

// serve is the only goroutine that touches the machine.
func (r *runner) serve() {
	defer r.shutdown()
	ticks := r.run.ticks()
	var fire [maxTicks]func(time.Time)
	var tickC [maxTicks]<-chan time.Time
	for i, t := range ticks {
		tk := time.NewTicker(t.every)
		defer tk.Stop()
		fire[i], tickC[i] = t.fire, tk.C
	}
	stopCh := r.stopCh
	fire[0](r.now())
	for {
		select {
		case <-tickC[0]:
			fire[0](r.now())
		case <-tickC[1]:
			fire[1](r.now())
		case <-r.wake:
			r.run.step(node.Hint{Now: r.now()})
		case <-r.afterC:
			r.afterC = nil
			r.run.step(r.afterEv(r.now()))
		case <-r.results:
			r.run.collect()
		case <-stopCh:
			stopCh = nil
			r.run.stopping()
			r.run.step(node.Stop{Now: r.now()})
		case <-r.drainCh:
			r.final("drain timeout")
			return
		case <-r.abortCh:
			r.final("stop context done")
			return
		}
		if r.m.Finished() {
			r.run.ending("drained")
			return
		}
	}
}

// final feeds DrainTimeout: the machine abandons what is still out and
// hands back what it can. Its store calls share a fresh context of
// RelinquishTimeout, so a cancelled Stop context still lets the hand-back
// be tried, and the step never blocks the exit for longer than that.
func (r *runner) final(why string) {
	r.run.ending(why)
	ctx, cancel := context.WithTimeoutCause(r.base, r.relinquishTimeout, errFinalOver)
	defer cancel()
	r.ioCtx = ctx
	r.run.step(node.DrainTimeout{Now: r.now()})
}

// shutdown releases the runner's timers and contexts and the host's
// resources, then closes Done.
func (r *runner) shutdown() {
	if r.after != nil {
		r.after.Stop()
	}
	r.unwatch()
	r.timerMu.Lock()
	if r.drainTimer != nil {
		r.drainTimer.Stop()
	}
	r.timerMu.Unlock()
	r.run.exit()
	r.ioCancel(context.Canceled)
	close(r.exited)
}
