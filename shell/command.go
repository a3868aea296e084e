package shell

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/invariants"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// replied does the Pump's bookkeeping on what one store call answered (the
// loop made the call, loop.go): its logs (unless the call was cut short,
// logged by the loop), progress and Cursor acknowledgements, Stats and Observer.
func (p *Pump) replied(r node.Reply, cut bool, now time.Time) {
	if !cut {
		p.logReply(r)
	}
	p.ackRenewal(r)
	p.countReply(r, now)
	if p.cfg.Observer != nil {
		p.observeReply(r)
	}
}

// carry carries out one command of the Driver that is no store call; none
// has a result event of its own.
func (p *Pump) carry(c node.Command) node.Event {
	switch c := c.(type) {
	case node.Execute:
		p.execute(c)
	case node.LetLapse:
		p.letLapse(c)
	case node.Abandon:
		p.abandon(c)
	case node.SignalCancel:
		a := p.attempts[c.Lease]
		if a == nil {
			unknownAttempt(c)
			return nil
		}
		p.log.Info("cancel requested: signalling handler", p.attrs(c.Lease, a)...)
		a.cancel(ErrCancelRequested)
	case node.Forget:
		p.forget(c)
	case node.PollAfter:
		p.pollAfter(c.Delay)
	default:
		// A Command the Shell does not know is a broken internal invariant
		// between two packages of this module.
		panic(fmt.Sprintf("shell: unknown command %T", c))
	}
	return nil
}

// unknownAttempt reports a command of the Driver that names an Attempt the
// Pump does not hold: the Driver names only Attempts it has executing, and
// the Pump holds each from its Execute to its Forget or Abandon, so this is
// a broken invariant between the two. A production build ignores the
// command; a build that checks invariants (package internal/invariants)
// panics.
func unknownAttempt(c node.Command) {
	if invariants.Enabled {
		invariants.Failf("shell: %s names an Attempt the Pump does not hold", c)
	}
}

// detail joins the Failure Detail, Job Output and Tag delta kept for an
// outcome's Attempt onto it, with a Cursor the handler saved that no
// renewal delivered; the Caller calls it for each reported outcome.
func (p *Pump) detail(o *store.Outcome) {
	if a := p.attempts[o.Lease]; a != nil {
		o.FailureDetail, o.Output, o.TagDelta = a.detail, a.output, a.tags
		if v, ok := a.cursor.unsent(false); ok {
			o.Cursor = v
		}
	}
}

// pollAfter arms the one pending re-poll to feed a Poll after d, replacing
// any pending one (the Driver only asks for a sooner one).
func (p *Pump) pollAfter(d time.Duration) {
	if p.manual != nil {
		// Driven by hand: the re-poll is a virtual instant (manual.go).
		p.manual.repollAt = p.now().Add(d)
		return
	}
	p.arm(d, repoll)
}

// repoll is the event a re-poll's timer feeds.
func repoll(now time.Time) node.Event { return node.Poll{Now: now} }

// forget drops what the Pump kept for Attempts the Driver is done with.
func (p *Pump) forget(c node.Forget) {
	if c.Reason == node.ForgetRefused {
		p.log.Error("outcome batch refused by the store: dropped, its leases will lapse", "outcomes", len(c.Leases))
	}
	for _, l := range c.Leases {
		delete(p.attempts, l)
	}
}

// execute starts the handler of one claimed Attempt on a handler goroutine:
// an idle one if there is one, else a new one. Handler goroutines outlive
// their Attempt and wait for the next until the loop exits, so a busy Pump
// does not pay for a new goroutine, and for growing its stack, per job.
//
// An Attempt with a Timeout gets a context that its deadline cancels with
// ErrAttemptTimeout, timed by the host's timers from now, the instant the
// Driver timed it from (the claim's result).
func (p *Pump) execute(c node.Execute) {
	j := c.Job
	l := j.Lease()
	ctx, cancel := context.WithCancelCause(p.handlerCtx)
	if c.Timeout > 0 && p.manual == nil { // a Manual times it on the Pump's clock
		var stopTimer context.CancelFunc
		ctx, stopTimer = context.WithTimeoutCause(ctx, c.Timeout, ErrAttemptTimeout)
		cancelCause := cancel
		cancel = func(cause error) {
			cancelCause(cause) // first, so the handler's context ends with cause
			stopTimer()
		}
	}
	a := &attempt{cancel: cancel, queue: j.Queue, wireName: j.WireName}
	a.ctx = attemptContext{Context: ctx, progress: &a.progress, cursor: &a.cursor}
	ctx = &a.ctx // carries the Progress and Cursor without a context.WithValue of their own
	p.attempts[l] = a
	p.running++
	if p.log.Enabled(ctx, slog.LevelDebug) {
		p.log.Debug("attempt started", p.attrs(l, a, "timeout", c.Timeout)...)
	}
	p.peak = max(p.peak, len(p.attempts))
	t := task{ctx: ctx, job: j, timeout: c.Timeout}
	if p.manual != nil {
		p.manual.start(t)
		return
	}
	select {
	case p.tasks <- t:
	default:
		go p.handle(t)
	}
}

// handle runs t and then every task handed to it while idle, until the loop
// retires it (see retireIdle) or exits (closing the task channel). An
// abandoned handler that is still running keeps its goroutine busy; the
// next Attempt gets another.
//
// An idle goroutine waits on the task channel alone, not in a select: the
// loop hands a burst of Attempts to idle goroutines one receive each, and a
// select over several channels cost a busy Pump about a tenth of its CPU.
// A retirement is a task without a context.
// stackReserve is how much of its stack an idle handler goroutine keeps
// in use while it waits for the next Attempt (await).
const stackReserve = 8 << 10

// await receives the next task with stackReserve bytes of its frame in use.
// The garbage collector halves the stack of a goroutine that uses less
// than a quarter of it, so a handler goroutine parked in a shallow frame
// would lose the stack its last handler grew (JSON decoding alone takes it
// past the initial size), and every Attempt would grow it again, copying
// it each time: a quarter to a third of a busy Pump's CPU on a noop drain
// went to copying stacks. Parked below a frame this deep, it keeps a stack
// of up to four times the reserve.
//
//go:noinline
func (p *Pump) await() (task, bool) {
	var reserve [stackReserve]byte
	keepFrame(reserve[:])
	t, ok := <-p.tasks
	return t, ok
}

// keepFrame uses b, so that the frame holding it is kept as declared.
//
//go:noinline
func keepFrame(b []byte) { b[len(b)-1] = 1 }

func (p *Pump) handle(t task) {
	for {
		p.queueResult(finished{lease: t.job.Lease(), result: p.run(t)})
		t = task{} // drop the finished Attempt's job and context while idle
		p.idle.Add(1)
		next, ok := p.await()
		p.idle.Add(-1)
		if !ok || next.ctx == nil {
			return
		}
		t = next
	}
}

// retireIdle runs on each heartbeat tick: it ends the idle handler
// goroutines that the busiest moment since the previous tick did not need,
// so the goroutines a burst started do not outlive it by more than two
// heartbeats, while a steady load keeps its own.
func (p *Pump) retireIdle() {
	spare := int(p.idle.Load()) - (p.peak - len(p.attempts))
	p.peak = len(p.attempts)
	for ; spare > 0; spare-- {
		select {
		case p.tasks <- task{}:
		default:
			return
		}
	}
}

// run runs t's Attempt. An Attempt that fails after its timeout cancelled
// its context gets Failure Detail naming the timeout (TimeoutDetail).
//
// The Observer, if any, is told of the start and the end here, on the
// handler goroutine, so it never holds the loop.
func (p *Pump) run(t task) Result {
	var start time.Time
	if p.cfg.Observer != nil {
		p.cfg.Observer.AttemptStarted(t.ctx, t.job)
		start = time.Now()
	}
	r := p.runExecutor(t.ctx, t.job)
	failed := r.Result != core.ResultSucceeded && r.Result != core.ResultUnroutable && r.Result != core.ResultUndecodable &&
		r.Result != core.ResultSnoozed
	if failed && context.Cause(t.ctx) == ErrAttemptTimeout {
		r.FailureDetail = TimeoutDetail(t.timeout, r.FailureDetail)
	}
	if p.cfg.Observer != nil {
		p.cfg.Observer.AttemptFinished(t.ctx, t.job, r, time.Since(start))
	}
	return r
}

// runExecutor calls the Executor, turning a panic into a failed Attempt
// whose Failure Detail is the panic value and stack.
func (p *Pump) runExecutor(ctx context.Context, j job.Job) (r Result) {
	defer func() {
		if v := recover(); v != nil {
			r = Result{Result: core.ResultFailed, FailureDetail: PanicDetail(v)}
		}
	}()
	return p.cfg.Executor.Execute(ctx, j)
}

// letLapse carries out a LetLapse: the Driver renews this Attempt's Lease no
// more because its handler ignored its timeout. The Pump keeps the Attempt,
// whose handler still occupies a Worker, and makes sure its context is
// cancelled.
func (p *Pump) letLapse(c node.LetLapse) {
	a := p.attempts[c.Lease]
	if a == nil {
		unknownAttempt(c)
	}
	p.log.Error("attempt timeout: the handler ignored its cancelled context past the grace; "+
		"its lease is no longer renewed, so the job runs again once the lease lapses, "+
		"and the handler keeps its worker until it returns",
		p.attrs(c.Lease, a, "timeout", c.Timeout)...)
	if a != nil {
		a.cancel(ErrAttemptTimeout)
	}
}

func (p *Pump) abandon(c node.Abandon) {
	a := p.attempts[c.Lease]
	delete(p.attempts, c.Lease)
	if a != nil && !a.done {
		p.running--
	}
	cause := ErrShutdown
	if c.Reason == node.AbandonLeaseLost {
		cause = ErrLeaseLost
		p.log.Warn("lease lost: abandoning attempt", p.attrs(c.Lease, a)...)
		if p.cfg.Observer != nil && a != nil {
			p.cfg.Observer.LeaseLost(p.ioCtx, c.Lease, a.queue, a.wireName)
		}
	} else {
		p.log.Info("drain period over: abandoning attempt", p.attrs(c.Lease, a)...)
		if p.handedBack != nil && a != nil {
			p.handedBack[c.Lease] = a
		}
	}
	if a != nil {
		a.cancel(cause)
	}
}

func detailOf(a *attempt) string {
	if a == nil {
		return ""
	}
	return a.detail
}
