package shell

import (
	"context"
	"errors"
	"time"

	"github.com/backwave/backwave/node"
)

// WalkManual drives a WalkPump by hand, as Manual drives a Pump: the
// caller says what time it is (WalkPumpConfig.Clock, usually a vtime.Manual
// it moves itself) and calls Run at each instant it visits. Every event,
// command and store call goes through the same Shell loop as a started
// WalkPump's; what differs is who keeps time and where the callback runs:
//
//   - The walk's ticker is virtual: Run fires it when its instant has
//     come, on the grid of the Walker's Tick from the instant WalkManual
//     was made; ticks a caller jumped over fire once.
//   - The callback runs at once, on the caller's goroutine, inside Run: a
//     delivery takes no Virtual Time, so the walk's Lease never needs a
//     renewal.
//
// A walk that has caught up (node.Walker.CaughtUp) has no instant of its
// own (Next): only a Transition Log that grew can give it work, and the
// caller, who sees the store change, says so with Owe.
//
// A WalkManual is used by one goroutine (the test's). Make it with
// WalkPump.Manual; end it with Close.
type WalkManual struct {
	p *WalkPump
	// next is the next instant of the virtual ticker.
	next time.Time
	// owed: the Transition Log grew since the walk last caught up; claims
	// counts the walk's claims, and owedAt the count Owe saw.
	owed           bool
	claims, owedAt int
	closed         bool
}

// ErrWalkManualClosed is returned by WalkManual's methods after Close.
var ErrWalkManualClosed = errors.New("shell: manual walk closed")

// Manual takes p over for driving by hand (see WalkManual). ctx's values
// reach every delivery; its cancellation does nothing (Close ends the
// WalkManual). A WalkPump that was started, or taken over already, cannot
// be taken over, and one taken over cannot Start.
func (p *WalkPump) Manual(ctx context.Context) (*WalkManual, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return nil, errors.New("shell: manual walk: the walk pump was started or is already driven by hand")
	}
	p.started = true // Start refuses from now on
	close(p.exited)  // and Stop returns at once: the loop goroutine never runs
	p.begin(ctx)
	p.byHand = true
	m := &WalkManual{p: p, next: p.now()}
	p.manual = m
	return m, nil
}

// Observer returns the Transition Observer's name.
func (m *WalkManual) Observer() string { return m.p.cfg.Walker.Observer }

// Owe tells the walk that the Transition Log may hold entries it has not
// read: until a claim after this one finds it caught up again, Next
// reports the walk's next round.
func (m *WalkManual) Owe() {
	m.owed, m.owedAt = true, m.claims
}

// Next returns the next instant after now at which the walk has something
// to do — the first tick at or after the Walker's own NotBefore — and false
// when it has caught up and nothing is owed.
func (m *WalkManual) Next(now time.Time) (time.Time, bool) {
	w := m.p.walker
	if m.closed || w.Finished() || (!m.owed && w.CaughtUp()) {
		return time.Time{}, false
	}
	at := m.next
	if nb := w.NotBefore(); nb.After(at) {
		at = nextTick(m.next, nb.Add(-1), m.tick())
	}
	return later(at, now), true
}

func (m *WalkManual) tick() time.Duration { return m.p.walker.Config().Tick() }

// Run carries out what is due at the clock's current time: the walk's
// tick, if its instant has come, and the round it starts, every delivery
// included. It reports whether it did anything.
func (m *WalkManual) Run() (bool, error) {
	if m.closed {
		return false, ErrWalkManualClosed
	}
	p := m.p
	now := p.now()
	if now.Before(m.next) {
		return false, nil
	}
	m.next = nextTick(m.next, now, m.tick())
	p.step(node.WalkTick{Now: now})
	if m.owed && m.claims > m.owedAt && p.walker.CaughtUp() {
		m.owed = false
	}
	return true, nil
}

// Close ends the WalkManual as a Stop: the cursor moves past what was
// delivered and the walk's Lease is released. Close is idempotent.
func (m *WalkManual) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	p := m.p
	p.step(node.Stop{Now: p.now()})
	if !p.walker.Finished() {
		p.step(node.DrainTimeout{Now: p.now()})
	}
	p.deliverCancel(ErrObserverStopping)
	return nil
}
