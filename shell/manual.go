package shell

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// Manual drives a Pump by hand instead of by its loop goroutine and the
// host's timers: the caller says what time it is (Config.Clock, usually a
// vtime.Manual it moves itself) and calls Run, or Poll, at each instant it
// visits.
// Every event, command, store call, Failure Detail, Job Output, Tag delta,
// panic recovery and attempt timeout goes through the same code as a
// started Pump; what differs is only who keeps time and who runs the
// handlers:
//
//   - The poll and heartbeat tickers are virtual: Run fires each one whose
//     instant has come, on the grid of PollInterval and HeartbeatInterval
//     from the instant Manual was made. Ticks a caller jumped over fire
//     once, and the heartbeat of a Pump holding no Attempt (nothing to
//     renew or flush) is skipped, so a caller may jump over an idle
//     stretch at no cost.
//   - An Attempt's handler runs on its own goroutine, but one at a time:
//     Run waits until it returns or parks in Sleep before it goes on, so no
//     two handlers, and no handler and the Driver, ever run at once.
//   - An attempt timeout is timed on Config.Clock: Run cancels the
//     handler's context with ErrAttemptTimeout once the clock has reached
//     the deadline. Virtual Time stands still while a handler runs, so only
//     a handler parked in Sleep can run past its timeout.
//
// A Manual is used by one goroutine (the test's). Make it with
// Pump.Manual; end it with Close.
type Manual struct {
	p *Pump

	// nextPoll and nextBeat are the next instants of the virtual tickers.
	nextPoll, nextBeat time.Time
	// repollAt is the instant of the one pending node.PollAfter (a spent
	// Rate Limit's window reopening), zero when none is.
	repollAt time.Time
	// runs are the Attempts whose handler goroutine has not returned, in
	// start order.
	runs []*manualRun
	// done are the results of handlers that returned, in the order they
	// did, waiting to be fed to the Driver between steps, as the loop
	// takes them.
	done []finished
	// idle are the handler goroutines waiting for an Attempt; workers
	// counts every live one.
	idle    []*manualWorker
	workers sync.WaitGroup
	yield   chan manualYield
	closed  bool
	// exited reports a handler goroutine that ended without returning
	// (runtime.Goexit, as t.FailNow does): Run reports it as an error.
	exited error
}

// manualRun is one Attempt whose handler goroutine is live: running (the
// caller waits for it) or parked in Sleep.
type manualRun struct {
	m        *Manual
	lease    job.Lease
	ctx      context.Context
	deadline time.Time       // the attempt timeout on Config.Clock; zero: none
	timedOut bool            // the deadline has been acted on
	wake     time.Time       // while parked: when Sleep ends
	sleepCtx context.Context // while parked: the context Sleep was given
	resume   chan struct{}
}

// manualYield is what a handler goroutine tells Run: it parked in Sleep
// until wake, or it ended (returned with result, or not).
type manualYield struct {
	run      *manualRun
	parked   bool
	wake     time.Time
	ctx      context.Context // Sleep's
	returned bool
	result   Result
	worker   *manualWorker
}

type manualKey struct{}

// ErrManualClosed is returned by Manual's methods after Close.
var ErrManualClosed = errors.New("shell: manual pump closed")

// Manual takes p over for driving by hand (see Manual) and feeds the
// Driver its first Poll at the first Run, as Start does at once. ctx's values reach every store call
// and handler; its cancellation does nothing (Close ends the Manual). A
// Pump that was started, stopped or taken over already cannot be taken
// over, and a Pump taken over cannot Start.
func (p *Pump) Manual(ctx context.Context) (*Manual, error) {
	p.mu.Lock()
	switch {
	case p.started:
		p.mu.Unlock()
		return nil, errors.New("shell: manual: the pump was started")
	case p.stopped:
		p.mu.Unlock()
		return nil, errors.New("shell: manual: the pump was stopped or is already driven by hand")
	}
	// stopped, so that Start refuses and Stop returns at once: the loop
	// never runs.
	p.stopped = true
	p.mu.Unlock()

	m := &Manual{p: p, yield: make(chan manualYield)}
	p.manual = m
	p.byHand = true
	base := context.WithoutCancel(ctx)
	p.handlerCtx = base
	p.ioCtx, p.ioCancel = context.WithCancelCause(base)
	if p.cfg.Hints != nil {
		p.unsubscribe = p.cfg.Hints.SubscribeHints(func(queue string) {
			if p.serves[queue] {
				p.Wake()
			}
		})
	}
	// The first Run polls at once, as Start does, and the tickers run from
	// here.
	now := p.now()
	m.nextPoll = now
	m.nextBeat = now.Add(p.cfg.HeartbeatInterval)
	return m, nil
}

// Worker returns the lease-holder identity of the Pump.
func (m *Manual) Worker() job.WorkerID { return m.p.Worker() }

// Config returns the configuration the Pump runs with, defaults filled.
func (m *Manual) Config() Config { return m.p.cfg }

// Busy reports whether the Pump holds any Attempt: a handler parked in
// Sleep, or an outcome not yet reported.
func (m *Manual) Busy() bool { return len(m.runs) > 0 || m.p.drv.Held() > 0 }

// Next returns the next instant after now at which the Pump has something
// of its own to do, and false when it has nothing: while it holds an
// Attempt, the next tick of either ticker, attempt deadline or end of a
// Sleep. An idle Pump's ticks are not reported: a caller that jumps over
// them loses nothing but polls that would have found nothing to do (it
// must visit the instants work comes due at itself, and call Poll there).
func (m *Manual) Next(now time.Time) (time.Time, bool) {
	if !m.Busy() {
		if !m.repollAt.IsZero() {
			// Work waits for a Rate Limit's window: the re-poll is the
			// Pump's own next instant even while it holds nothing.
			return later(m.repollAt, now), true
		}
		return time.Time{}, false
	}
	next := earliest(m.nextPoll, m.nextBeat)
	if !m.repollAt.IsZero() {
		next = earliest(next, m.repollAt)
	}
	for _, r := range m.runs {
		if !r.deadline.IsZero() && !r.timedOut {
			next = earliest(next, r.deadline)
		}
		if !r.wake.IsZero() {
			next = earliest(next, r.wake)
		}
	}
	return later(next, now), true
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func later(t, now time.Time) time.Time {
	if t.Before(now) {
		return now
	}
	return t
}

// Run carries out everything due at the clock's current time, until the
// Pump is quiescent: the ticks that have come (each fires once, however
// many were jumped over), attempt timeouts that have run out, Sleeps that
// have ended, handlers whose context was cancelled, and the Wake-Up Hint
// slot. It reports whether it did anything, and an error if a handler
// goroutine ended without returning.
func (m *Manual) Run() (bool, error) {
	if m.closed {
		return false, ErrManualClosed
	}
	p := m.p
	did := false
	now := p.now()
	switch {
	case !now.Before(m.nextPoll):
		m.nextPoll = nextTick(m.nextPoll, now, p.cfg.PollInterval)
		m.repollAt = time.Time{}
		p.step(node.Poll{Now: now})
		did = true
	case !m.repollAt.IsZero() && !now.Before(m.repollAt):
		m.repollAt = time.Time{}
		p.step(node.Poll{Now: now})
		did = true
	}
	if !now.Before(m.nextBeat) {
		m.nextBeat = nextTick(m.nextBeat, now, p.cfg.HeartbeatInterval)
		// A heartbeat of a Pump holding no Attempt renews nothing and
		// flushes nothing: it is skipped like an idle poll tick.
		if m.Busy() {
			p.step(node.Heartbeat{Now: now})
			did = true
		}
	}
	for _, r := range m.runs {
		if !r.deadline.IsZero() && !r.timedOut && !now.Before(r.deadline) {
			r.timedOut = true
			if a := p.attempts[r.lease]; a != nil {
				a.cancel(ErrAttemptTimeout)
			}
		}
	}
	more, err := m.drain()
	return did || more, err
}

// Poll feeds the Driver a Poll at the clock's current time, and then
// settles as Run does. Between ticks it is an earlier poll, as a Wake-Up
// Hint is, that also runs the maintenance beat when that is due; at or past
// a tick it is that tick's poll.
func (m *Manual) Poll() error {
	if m.closed {
		return ErrManualClosed
	}
	now := m.p.now()
	if !now.Before(m.nextPoll) {
		// The tick that has come is this poll.
		m.nextPoll = nextTick(m.nextPoll, now, m.p.cfg.PollInterval)
	}
	m.p.step(node.Poll{Now: now})
	return m.settle()
}

// settle is drain for callers that do not need to know whether anything
// happened.
func (m *Manual) settle() error {
	_, err := m.drain()
	return err
}

// drain resumes every parked handler that may go on (its Sleep is over or
// its context done) and feeds every pending Wake-Up Hint, until neither is
// left.
func (m *Manual) drain() (bool, error) {
	p := m.p
	did := false
	for {
		progressed := false
		now := p.now()
		if len(m.done) > 0 {
			f := m.done[0]
			m.done = m.done[1:]
			p.finish(f)
			did = true
			continue
		}
		for _, r := range m.runs {
			if !r.wake.IsZero() && (!now.Before(r.wake) || r.sleepCtx.Err() != nil) {
				r.wake, r.sleepCtx = time.Time{}, nil
				r.resume <- struct{}{}
				m.await()
				progressed = true
				break // runs changed
			}
		}
		if !progressed {
			select {
			case <-p.wake:
				p.step(node.Hint{Now: now})
				progressed = true
			default:
			}
		}
		if !progressed {
			break
		}
		did = true
	}
	err := m.exited
	m.exited = nil
	return did, err
}

// nextTick returns the first tick of a ticker at from, from+every, … that
// is after now.
func nextTick(from, now time.Time, every time.Duration) time.Time {
	if from.After(now) {
		return from
	}
	return from.Add((now.Sub(from)/every + 1) * every)
}

// start runs t's handler on its own goroutine and waits until it returns
// or parks (execute calls it for a Pump driven by hand).
func (m *Manual) start(t task) {
	r := &manualRun{m: m, lease: t.job.Lease(), resume: make(chan struct{})}
	if t.timeout > 0 {
		r.deadline = m.p.now().Add(t.timeout)
	}
	r.ctx = context.WithValue(t.ctx, manualKey{}, r)
	t.ctx = r.ctx
	m.runs = append(m.runs, r)
	var w *manualWorker
	if n := len(m.idle); n > 0 {
		w, m.idle = m.idle[n-1], m.idle[:n-1]
	} else {
		w = &manualWorker{tasks: make(chan manualTask)}
		m.workers.Add(1)
		go m.work(w)
	}
	w.tasks <- manualTask{run: r, task: t}
	m.await()
}

// manualWorker is a handler goroutine of a Manual. Like the loop's, it
// outlives its Attempt and waits for the next, so a run of many Attempts
// does not pay for a new goroutine, and for growing its stack, per job.
type manualWorker struct {
	tasks chan manualTask // closed by Close
}

type manualTask struct {
	run  *manualRun
	task task
}

// work is a handler goroutine: it runs the Attempts handed to it, one at a
// time, until Close.
func (m *Manual) work(w *manualWorker) {
	defer m.workers.Done()
	for mt := range w.tasks {
		m.handle(w, mt.run, mt.task)
	}
}

// handle runs one Attempt and tells the Manual how it ended, even if the
// handler never returns (runtime.Goexit, which also ends the goroutine).
func (m *Manual) handle(w *manualWorker, r *manualRun, t task) {
	returned := false
	var res Result
	defer func() {
		m.yield <- manualYield{run: r, returned: returned, result: res, worker: w}
	}()
	res = m.p.run(t)
	returned = true
}

// await waits for the running handler goroutine to park or end, and keeps
// an ended one's result for drain.
func (m *Manual) await() {
	y := <-m.yield
	if y.parked {
		y.run.wake, y.run.sleepCtx = y.wake, y.ctx
		return
	}
	for i, r := range m.runs {
		if r == y.run {
			m.runs = append(m.runs[:i], m.runs[i+1:]...)
			break
		}
	}
	if y.returned {
		m.idle = append(m.idle, y.worker) // it waits for the next Attempt
	} else {
		if m.exited == nil {
			m.exited = fmt.Errorf("shell: the handler of job %d attempt %d exited without returning (runtime.Goexit, as t.FailNow does)",
				y.run.lease.ID, y.run.lease.Attempt)
		}
		y.result = Result{FailureDetail: "the handler exited without returning (runtime.Goexit)"}
	}
	m.done = append(m.done, finished{lease: y.run.lease, result: y.result})
}

// Close ends the Manual as a Stop whose drain period is already over: the
// Driver claims nothing more, reports what it buffered, abandons the
// Attempts still parked (their context is cancelled with ErrShutdown) and
// relinquishes their Leases. It waits for every handler goroutine to
// return, so none outlives it. Close is idempotent.
func (m *Manual) Close() error {
	if m.closed {
		return nil
	}
	_, err := m.drain() // results already in are reported, as in a drain
	m.closed = true
	p := m.p
	p.step(node.Stop{Now: p.now()})
	p.step(node.DrainTimeout{Now: p.now()})
	for len(m.runs) > 0 {
		r := m.runs[0]
		if a := p.attempts[r.lease]; a != nil {
			a.cancel(ErrShutdown)
		}
		r.wake, r.sleepCtx = time.Time{}, nil
		r.resume <- struct{}{}
		m.await()
	}
	for _, f := range m.done {
		p.finish(f) // abandoned: dropped
	}
	m.done = nil
	for _, w := range m.idle {
		close(w.tasks)
	}
	m.idle = nil
	m.workers.Wait()
	if p.unsubscribe != nil {
		p.unsubscribe()
	}
	for l, a := range p.attempts {
		a.cancel(ErrShutdown)
		delete(p.attempts, l)
	}
	p.ioCancel(context.Canceled)
	if err == nil {
		err = m.exited
	}
	m.exited = nil
	return err
}

// Sleep pauses the calling handler for d, or until ctx is done, and then
// returns context.Cause(ctx) if ctx is done and nil otherwise. Called from
// a handler of a Pump driven by hand (Manual), d passes on the Pump's
// clock: the handler parks, its Manual goes on with other work, and it
// resumes once the clock has been moved past d, or its context is
// cancelled (an attempt timeout, a lost Lease, a cancel request, Close).
// A ctx that does not end with the handler's (context.WithoutCancel) makes
// a handler that ignores its cancellation: it sleeps on, except through
// Close, which resumes it early with nil. Anywhere else Sleep waits on the
// host's timer. A d ≤ 0 does not wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if d <= 0 {
		return nil
	}
	r, ok := ctx.Value(manualKey{}).(*manualRun)
	if !ok {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	r.m.yield <- manualYield{run: r, parked: true, wake: r.m.p.now().Add(d), ctx: ctx}
	<-r.resume
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// Now returns the time on the clock the handler whose context is ctx runs
// by: a Pump driven by hand (Manual) runs on the Pump's clock, any other on
// the host's. A handler that waits with Sleep times its wait from it.
func Now(ctx context.Context) time.Time {
	if r, ok := ctx.Value(manualKey{}).(*manualRun); ok {
		return r.m.p.now()
	}
	return time.Now()
}

// ByHand reports whether ctx is the context of a handler of a Pump driven
// by hand (Manual): one whose waits must go through Sleep, on the Pump's
// clock, never block on the host's.
func ByHand(ctx context.Context) bool {
	_, ok := ctx.Value(manualKey{}).(*manualRun)
	return ok
}
