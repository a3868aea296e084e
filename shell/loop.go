package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/vtime"
)

// loop is the one Shell loop body every node.Machine runs on — a Pump's
// Driver and a walk's Walker alike: it feeds an event to the machine and
// carries out every command the machine yields, in order, feeding each
// store result straight back, until none remains. Store commands go through
// the machine's node.Caller (the one Command → store call → Event mapping),
// one at a time, under the one deadline rule (node.Pacing.CallTimeout) and
// the loop's I/O context, which the end of a drain period cancels; every
// other command goes to the host (the Pump's handlers, the walk's
// deliveries). A machine driven by hand (Manual, WalkManual) runs on the
// same loop, its calls without a deadline: the In-Memory Store on Virtual
// Time never blocks.
//
// The loop is owned by one goroutine: the host's runner (runner.go), or the
// test's when driven by hand.
type loop struct {
	m      node.Machine
	caller node.Caller
	clock  vtime.Clock
	pacing node.Pacing
	log    *slog.Logger
	host   host
	// observer, if set, is told each store call's latency (Observer).
	observer Observer
	// byHand: driven by hand, so store calls get no deadline.
	byHand bool
	ioCtx  context.Context
	queue  []node.Command
	head   int
}

// host is what a loop's owner carries out itself.
type host interface {
	// carry carries out a command that is no store call and returns the
	// event that reports its result at once, or nil.
	carry(c node.Command) node.Event
	// replied is told what each store call answered, at now, the instant
	// its result event is stamped; cut: the call was cut short, and logged
	// as such already.
	replied(r node.Reply, cut bool, now time.Time)
}

// step feeds one event and carries out every command it yields, in order,
// feeding each result straight back, until none remains.
func (l *loop) step(ev node.Event) {
	l.queue = l.m.Step(ev, l.queue)
	for l.head < len(l.queue) {
		c := l.queue[l.head]
		l.queue[l.head] = nil
		l.head++
		if l.log.Enabled(l.ioCtx, slog.LevelDebug) {
			l.log.Debug("command", "command", c.String())
		}
		var res node.Event
		if sc, ok := c.(node.StoreCommand); ok {
			r, cut := l.call(sc)
			now := l.now()
			l.host.replied(r, cut, now)
			res = r.Event(now)
		} else {
			res = l.host.carry(c)
		}
		if res != nil {
			l.queue = l.m.Step(res, l.queue)
		}
	}
	l.queue, l.head = l.queue[:0], 0
}

// now reads the clock that stamps the machine's events.
func (l *loop) now() time.Time { return l.clock.Now() }

// Causes a store call's context ends with when the call is cut short.
var (
	errCallTimeout = errors.New("shell: store call timed out")
	errDrainOver   = errors.New("shell: drain period over")
	errStopAborted = errors.New("shell: stop context done")
	errFinalOver   = errors.New("shell: RelinquishTimeout over")
)

// call makes one store call through the Caller under its deadline
// (node.Pacing.CallTimeout for the machine's Lease) and the loop's I/O
// context. A call cut short by either is logged here, once, and reported
// true; its Reply carries the error.
func (l *loop) call(c node.StoreCommand) (node.Reply, bool) {
	if l.byHand { // the In-Memory Store on Virtual Time: no call blocks
		return l.caller.Call(l.ioCtx, c), false
	}
	limit := l.pacing.CallTimeout(c, l.m.LeaseDuration())
	ctx, cancel := context.WithTimeoutCause(l.ioCtx, limit, errCallTimeout)
	defer cancel()
	var start time.Time
	if l.observer != nil {
		start = time.Now()
	}
	r := l.caller.Call(ctx, c)
	if l.observer != nil {
		// The error the Observer sees is the store's own; a call cut
		// short gets its cause added below, for the logs and the machine.
		l.observer.StoreCall(l.ioCtx, Operation(c), time.Since(start), r.Err)
	}
	if r.Err == nil || ctx.Err() == nil {
		return r, false
	}
	cause := context.Cause(ctx)
	level, msg := slog.LevelWarn, "store call cancelled"
	switch cause {
	case errCallTimeout:
		r.Err = fmt.Errorf("%w: no answer within %v: %w", cause, limit, r.Err)
		level, msg = slog.LevelError, "store call timed out: no answer within its deadline"
	case errDrainOver:
		msg = "store call cancelled: the drain period is over"
	case errStopAborted:
		msg = "store call cancelled: the stop context is done"
	case errFinalOver:
		msg = "store call cancelled: RelinquishTimeout is over"
	}
	if cause != errCallTimeout {
		r.Err = fmt.Errorf("%w: %w", cause, r.Err)
	}
	if handBack(c) {
		level, msg = slog.LevelWarn, msg+"; the hand-back failed, the lease will lapse instead"
	} else {
		msg += "; counted as a failed call"
	}
	l.log.Log(l.ioCtx, level, msg, "command", c.String(), "timeout", limit, "error", r.Err)
	return r, true
}

// handBack reports whether c gives a Lease back: best effort, a failure
// degrades to the lapse.
func handBack(c node.StoreCommand) bool {
	switch c := c.(type) {
	case node.Relinquish:
		return true
	case node.WalkAdvance:
		return c.Release
	}
	return false
}
