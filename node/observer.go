package node

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/store"
)

// # The Transition Observer walk
//
// A Walker is the sans-I/O state machine of one Transition Observer on one
// node: when to claim the walk of the Transition Log, which entry to hand
// the Shell next, when to renew the walk's Lease, when to move the durable
// cursor, and how long to wait after a delivery failed. Like the Driver it
// is one method, Step(event) → commands; it never reads a clock, and time
// arrives on each event. The host's callback runs in the Shell (Deliver),
// outside the boundary, like a handler.
//
// One walk round: claim (WalkClaim) → deliver each returned entry in order,
// one at a time (Deliver, answered by Delivered) → advance the cursor past
// what the claim read (WalkAdvance) → claim again at once while the claim
// read a full batch (more may be waiting) and had entries to deliver, else
// wait Interval. A full batch with nothing to deliver waits Interval too,
// and the next claim reads twice as many entries (up to 16 × Limit; back
// to Limit once there is something to deliver): so a registration whose
// states are rare costs one short round per Interval however fast the log
// grows, and still keeps up with up to 16 × Limit entries per Interval. The cursor moves only after delivery,
// so a node that stops mid-delivery leaves it behind and the next holder of
// the walk delivers again (at-least-once). A failed delivery moves the
// cursor to the last entry delivered and waits a backoff (Interval doubled
// per consecutive failure, at most MaxBackoff) before the next round, which
// delivers the failed entry again: the walk never skips an entry.
//
// While an entry is being delivered, a WalkTick at least LeaseDuration/3
// after the last renewal renews the Lease (a WalkAdvance to the last entry
// delivered), so a slow callback keeps the walk. A renewal answered
// store.ErrStaleLease means the walk changed hands: the Walker drops its
// batch, ignores the delivery in flight when it returns, and claims again
// later (the new holder delivers from the durable cursor).

// maxWalkGrowth bounds how far idle full batches grow the claim.
const maxWalkGrowth = 16

// walkPhase is where a Walker's round stands.
type walkPhase uint8

const (
	walkIdle walkPhase = iota
	walkClaiming
	walkDelivering
	walkAdvancing
	walkStopped
)

// Walker is one Transition Observer's walk on one node. Create one with
// NewWalker; it is not safe for concurrent use.
type Walker struct {
	cfg   WalkerConfig
	next  OpID
	phase walkPhase

	// notBefore is the earliest Now of the next round's claim.
	notBefore time.Time
	failures  int

	holding   bool
	token     int64
	cursor    store.ObserverPosition
	through   store.ObserverPosition
	delivered store.ObserverPosition
	batch     []store.ObservedTransition
	at        int
	// read: the last claim read past its cursor; more: it read a full
	// batch, so the round after its advance starts at once.
	read, more bool

	// limit is what the next claim reads: Limit, doubled per idle full
	// batch up to 16 × Limit.
	limit int

	lastRenew time.Time
	// claimOp, renewOp, finalOp and earlyOp are the store commands in
	// flight (0: none): the round's claim, a renewal while delivering, the
	// advance that ends the round, and the planted early advance.
	claimOp, renewOp, finalOp, earlyOp OpID
	// after a failed delivery the final advance leaves the walk idle until
	// notBefore.
	failed   bool
	stopping bool
	// caughtUp: the last claim read nothing past the cursor (CaughtUp).
	caughtUp bool
}

// NewWalker returns a Walker for cfg, its defaults filled in.
func NewWalker(cfg WalkerConfig) (*Walker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.States = slices.Clone(cfg.States)
	return &Walker{cfg: cfg, next: 1, limit: cfg.Limit}, nil
}

// Config returns the configuration with its defaults filled in.
func (w *Walker) Config() WalkerConfig { return w.cfg }

// LeaseDuration returns the length of the walk's Lease (Machine).
func (w *Walker) LeaseDuration() time.Duration { return w.cfg.LeaseDuration }

// Finished reports whether a stopped Walker has finished (Machine): the
// same as Stopped.
func (w *Walker) Finished() bool { return w.Stopped() }

// CaughtUp reports whether the walk is idle with nothing known to deliver:
// its last claim held the walk and read nothing past the durable cursor, or
// some other node holds the walk, and no failure awaits its backoff. A
// caller that drives the Walker on Virtual Time (package jobtest) skips the
// ticks of a caught-up walk until the Transition Log grows.
func (w *Walker) CaughtUp() bool {
	return w.phase == walkIdle && w.caughtUp && w.failures == 0
}

// NotBefore returns the earliest Now at which an idle Walker's next claim
// may start; a WalkTick before it does nothing.
func (w *Walker) NotBefore() time.Time { return w.notBefore }

// Stopped reports whether a stopped Walker has finished: nothing in flight,
// the Lease released (or not held). The Shell exits its loop then.
func (w *Walker) Stopped() bool { return w.phase == walkStopped }

// Delivering reports whether a Deliver is out with no Delivered back yet.
func (w *Walker) Delivering() bool { return w.phase == walkDelivering }

func (w *Walker) op() OpID {
	id := w.next
	w.next++
	return id
}

func (w *Walker) planted(b plant.Bug) bool { return plant.Enabled && w.cfg.plant == b }

// Step feeds one event to the Walker and appends the commands it yields to
// out. It knows WalkTick, WalkClaimDone, Delivered, WalkAdvanceDone, Stop
// and DrainTimeout; any other event (a Driver's) is a broken invariant
// between the Walker and its caller, and Step panics, as Driver.Step does.
func (w *Walker) Step(ev Event, out []Command) []Command {
	switch ev := ev.(type) {
	case WalkTick:
		return w.tick(ev.Now, out)
	case WalkClaimDone:
		return w.claimed(ev, out)
	case Delivered:
		return w.deliveredOne(ev, out)
	case WalkAdvanceDone:
		return w.advanced(ev, out)
	case Stop:
		return w.stop(out)
	case DrainTimeout:
		return w.drainTimeout(out)
	default:
		panic(fmt.Sprintf("node: walker: unknown event %T", ev))
	}
}

// drainTimeout ends a stop whose drain period is over: a delivery still out
// is abandoned, its Delivered ignored, and the walk's Lease, not released,
// lapses (the next holder delivers that entry again). Nothing is written.
func (w *Walker) drainTimeout(out []Command) []Command {
	w.stopping = true
	if w.phase != walkStopped {
		w.phase = walkStopped
		w.holding = false
		w.batch, w.at = nil, 0
	}
	return out
}

func (w *Walker) tick(now time.Time, out []Command) []Command {
	switch w.phase {
	case walkIdle:
		if !now.Before(w.notBefore) && !w.stopping {
			return w.claim(out)
		}
	case walkDelivering:
		if w.renewOp == 0 && now.Sub(w.lastRenew) >= w.cfg.LeaseDuration/3 {
			w.lastRenew = now
			w.renewOp = w.op()
			out = append(out, WalkAdvance{Op: w.renewOp, Observer: w.cfg.Observer, Token: w.token, To: w.delivered, LeaseDuration: w.cfg.LeaseDuration})
		}
	}
	return out
}

func (w *Walker) claim(out []Command) []Command {
	w.phase = walkClaiming
	w.claimOp = w.op()
	return append(out, WalkClaim{Op: w.claimOp, Observer: w.cfg.Observer, States: w.cfg.States, Limit: w.limit, LeaseDuration: w.cfg.LeaseDuration,
		StartAtEnd: w.cfg.StartAtEnd})
}

// backoff is the wait after the failures-th consecutive failure.
func (w *Walker) backoff() time.Duration {
	d := w.cfg.Interval
	for i := 1; i < w.failures && d < w.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, w.cfg.MaxBackoff)
}

func (w *Walker) idle(until time.Time) {
	w.phase, w.notBefore = walkIdle, until
	w.batch, w.at = nil, 0
}

func (w *Walker) claimed(ev WalkClaimDone, out []Command) []Command {
	if w.phase != walkClaiming || ev.Op != w.claimOp {
		stray("WalkClaimDone", ev.Op)
		return out
	}
	w.claimOp = 0
	if ev.Err != nil {
		w.holding = false
		w.failures++
		w.idle(ev.Now.Add(w.backoff()))
		return w.stopIfStopping(out)
	}
	r := ev.Result
	w.caughtUp = !r.Held || r.Cursor == r.Through
	if !r.Held {
		w.holding = false
		w.idle(ev.Now.Add(w.cfg.Interval))
		return w.stopIfStopping(out)
	}
	w.holding, w.token = true, r.Token
	w.cursor, w.through, w.delivered = r.Cursor, r.Through, r.Cursor
	w.batch, w.at, w.read, w.more = r.Transitions, 0, r.Cursor != r.Through, r.More
	w.lastRenew, w.failed = ev.Now, false
	if w.stopping {
		return w.final(out, w.cursor, true)
	}
	if len(w.batch) == 0 {
		if w.read {
			return w.final(out, w.through, false)
		}
		w.failures = 0
		w.idle(ev.Now.Add(w.cfg.Interval))
		return out
	}
	w.limit = w.cfg.Limit
	if w.planted(plant.ObserverAdvancesFirst) {
		// The planted bug: the cursor moves past the batch before it is
		// delivered, so a delivery that fails or a node that stops mid-batch
		// loses what was left.
		w.earlyOp = w.op()
		out = append(out, WalkAdvance{Op: w.earlyOp, Observer: w.cfg.Observer, Token: w.token, To: w.through, LeaseDuration: w.cfg.LeaseDuration})
	}
	w.phase = walkDelivering
	return append(out, Deliver{Observer: w.cfg.Observer, Transition: w.batch[0]})
}

func (w *Walker) deliveredOne(ev Delivered, out []Command) []Command {
	if w.phase != walkDelivering || w.at >= len(w.batch) || ev.Position != w.batch[w.at].Position {
		return out // the walk changed hands meanwhile, or a stale answer
	}
	if ev.Failed {
		w.failures++
		w.failed = true
		w.notBefore = ev.Now.Add(w.backoff())
		return w.final(out, w.delivered, w.stopping)
	}
	w.delivered = w.batch[w.at].Position
	w.at++
	if w.stopping {
		return w.final(out, w.delivered, true)
	}
	if w.at < len(w.batch) {
		return append(out, Deliver{Observer: w.cfg.Observer, Transition: w.batch[w.at]})
	}
	w.failures = 0
	return w.final(out, w.through, false)
}

// final ends the round with the advance that moves the cursor to `to`.
func (w *Walker) final(out []Command, to store.ObserverPosition, release bool) []Command {
	w.phase = walkAdvancing
	w.finalOp = w.op()
	return append(out, WalkAdvance{Op: w.finalOp, Observer: w.cfg.Observer, Token: w.token, To: to, LeaseDuration: w.cfg.LeaseDuration, Release: release})
}

func (w *Walker) advanced(ev WalkAdvanceDone, out []Command) []Command {
	if ev.Op == 0 {
		stray("WalkAdvanceDone", ev.Op)
		return out
	}
	switch ev.Op {
	case w.renewOp:
		w.renewOp = 0
		if errors.Is(ev.Err, store.ErrStaleLease) && w.phase == walkDelivering {
			w.holding = false
			w.idle(ev.Now)
			return w.stopIfStopping(out)
		}
		return out
	case w.finalOp:
		w.finalOp = 0
	case w.earlyOp:
		w.earlyOp = 0 // the planted early advance
		return out
	default:
		stray("WalkAdvanceDone", ev.Op)
		return out
	}
	if w.stopping {
		w.holding = false
		w.phase = walkStopped
		return out
	}
	switch {
	case ev.Err != nil:
		// The fate of the advance is unknown or the walk changed hands:
		// the next round reads from the durable cursor again.
		w.holding = !errors.Is(ev.Err, store.ErrStaleLease)
		w.failures++
		w.idle(ev.Now.Add(w.backoff()))
	case w.failed:
		w.idle(w.notBefore)
	case w.more && len(w.batch) > 0:
		w.idle(ev.Now)
		return w.claim(out)
	case w.more:
		w.limit = min(2*w.limit, maxWalkGrowth*w.cfg.Limit)
		w.idle(ev.Now.Add(w.cfg.Interval))
	default:
		w.idle(ev.Now.Add(w.cfg.Interval))
	}
	return out
}

// stop begins a clean stop: no new round; the entry being delivered is
// waited for, then the cursor moves to what was delivered and the Lease is
// released.
func (w *Walker) stop(out []Command) []Command {
	if w.stopping {
		return out
	}
	w.stopping = true
	return w.stopIfStopping(out)
}

// stopIfStopping finishes a stop that waited for nothing but an idle walk.
func (w *Walker) stopIfStopping(out []Command) []Command {
	if !w.stopping || w.phase != walkIdle {
		return out
	}
	if w.holding {
		w.holding = false
		return w.final(out, w.delivered, true)
	}
	w.phase = walkStopped
	return out
}
