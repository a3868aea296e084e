// Package node is the Node Driver: the sans-I/O state machine that holds all of
// a node's scheduling judgment — when to claim and how much, when to renew a
// Lease, when to stop claiming under Backpressure, when to flush coalesced
// outcomes, when to run maintenance. It is one method, Driver.Step(event) →
// commands, plus small per-node state. It never awaits, sleeps, starts a
// goroutine or reads a clock: time arrives on each event. The production pump
// (package shell) and the Simulator (package internal/sim) are its two callers; both
// carry out the same commands.
//
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
//
// # Capacity
//
// A node's free capacity is PoolSize minus the jobs executing, the outcomes
// buffered, the outcomes in flight to the store and the slots a claim pass has
// asked for but not yet received. A finished job whose outcome has not been
// applied still holds its Lease, so it still occupies a Worker. A pass claims
// at most min(free, MaxClaimBatch) jobs; with no free capacity it claims
// nothing (Backpressure).
//
// # One claim pass at a time
//
// A Poll that lands while a pass is in flight sets one pending slot; when the
// pass ends, the slot starts exactly one more pass. Any number of Polls —
// ticks, Wake-Up Hints, re-polls after applied outcomes — coalesce into it.
//
// # Outcome coalescing
//
// Outcomes are buffered in completion order and flushed as one Report when
// (1) the buffer reaches MaxOutcomeBatch, (2) the node goes idle (nothing
// executing), or (3) a Poll or Heartbeat lands. On a Poll the claim pass is
// computed before the flush, so buffered outcomes still count against the
// pool; the slots they free reopen when the flush's applied outcomes trigger
// the immediate re-poll.
//
// # Rate Limits
//
// A Queue's Rate Limit is the store's to enforce, at claim: the Driver
// never counts starts. A claim that a spent Rate Limit withheld due jobs
// from says how long until the window reopens (ClaimDone.Reopen), and the
// Driver asks the Shell for a Poll then (PollAfter), keeping at most one
// such re-poll pending, the soonest. So a rated Queue's work starts when
// its window opens rather than up to a poll interval later, and a spent
// Rate Limit costs no claim beyond the ticks and that one re-poll.
//
// # Attempt timeouts
//
// An Attempt of a Wire Name with an attempt timeout (Config.AttemptTimeout,
// AttemptTimeouts) carries it on its Execute, and the Shell cancels the
// handler's context when it is over. The Driver times it too, from the Now
// of the ClaimDone that leased it: the first Heartbeat whose Now is at or
// past the claim plus the timeout plus AttemptTimeoutGrace finds a handler
// that ignored its context. That Attempt is left out of every Renew from
// then on (LetLapse), so its Lease lapses, expiry counts it like a failure
// and the job runs again elsewhere — while this node still counts it
// against PoolSize until its JobDone, because its handler still occupies a
// Worker. Its late outcome is reported like any other, and the fence finds
// it stale once the job has moved on.
package node

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/invariants"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// execution is what the Driver knows of one executing Attempt.
type execution struct {
	lease       job.Lease
	wireName    string
	maxAttempts int
	// snoozes is the job's snooze count as the claim read it, snoozeCap
	// the free snoozes its Wire Name gets.
	snoozes, snoozeCap int
	// cancelSignalled is set once SignalCancel was emitted for it.
	cancelSignalled bool
	// timeout is the Attempt's attempt timeout (zero: none).
	timeout time.Duration
	// lapseAt is the Now from which the Driver stops renewing the Lease:
	// the claim's Now plus timeout plus AttemptTimeoutGrace (zero without a
	// timeout).
	lapseAt time.Time
}

// pass is a claim pass in flight.
type pass struct {
	op OpID
	// requested is the Limit of the claim in flight.
	requested int
	// rest are the Weighted batches not yet issued.
	rest []batch
}

// Driver is one node's Node Driver. It is not safe for concurrent use: one
// Pump owns it.
type Driver struct {
	cfg    Config
	queues []string
	wrr    *wrr // nil for Strict

	nextOp    OpID
	executing map[job.ID]*execution
	// timedOut are the Attempts past their timeout and grace: no longer
	// renewed, still occupying a Worker until their JobDone.
	timedOut  map[job.Lease]*execution
	buffer    []core.Outcome
	reporting map[OpID][]core.Outcome
	inReport  int

	claim       *pass
	pendingPoll bool
	// repollAt is the Now of the PollAfter pending in the Shell (zero:
	// none): the soonest a spent Rate Limit reopens.
	repollAt time.Time

	renewOp         OpID
	expireOp        OpID
	lastMaintenance time.Time
	maint           maintenance
	fleet           fleetState

	stopping bool
}

// New returns a Driver for cfg, after filling defaults (Config.WithDefaults)
// and validating.
func New(cfg Config) (*Driver, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Driver{
		cfg:       cfg,
		queues:    cfg.Policy.QueueNames(),
		executing: make(map[job.ID]*execution),
		timedOut:  make(map[job.Lease]*execution),
		reporting: make(map[OpID][]core.Outcome),
	}
	if cfg.Policy.Kind == PolicyWeighted {
		d.wrr = newWRR(cfg.Policy)
	}
	return d, nil
}

// Config returns the Driver's configuration with defaults filled.
func (d *Driver) Config() Config { return d.cfg }

// Step feeds one event to the Driver and appends the commands the Shell must
// carry out, in order, to out. Pass a reused slice (out[:0]) to avoid
// allocating per step.
func (d *Driver) Step(ev Event, out []Command) []Command {
	switch e := ev.(type) {
	case Poll:
		if !d.repollAt.IsZero() && !e.Now.Before(d.repollAt) {
			d.repollAt = time.Time{} // this is the re-poll, or a Poll past it
		}
		return d.poll(e.Now, out)
	case Hint:
		if d.stopping || d.Free() <= 0 {
			return out
		}
		return d.poll(e.Now, out)
	case Heartbeat:
		return d.heartbeat(e.Now, out)
	case ClaimDone:
		return d.claimDone(e, out)
	case RenewDone:
		return d.renewDone(e, out)
	case JobDone:
		return d.jobDone(e, out)
	case ReportDone:
		return d.reportDone(e, out)
	case ExpireDone:
		return d.expireDone(e, out)
	case RelinquishDone:
		return out
	case SchedulesLoaded:
		return d.schedulesLoaded(e, out)
	case MintDone:
		return d.mintDone(e, out)
	case PurgeDone:
		return d.purgeDone(e, out)
	case FleetStamped:
		return d.fleetStamped(e, out)
	case Stop:
		return d.stop(out)
	case DrainTimeout:
		return d.drainTimeout(out)
	default:
		panic(fmt.Sprintf("node: unknown event %T", ev))
	}
}

// Free returns the node's free capacity: PoolSize minus executing (timed-out
// Attempts included), buffered and in-flight outcomes and slots requested by
// the claim in flight.
func (d *Driver) Free() int {
	used := d.Held()
	if d.planted(plant.CapacityForgetsBuffered) {
		used -= len(d.buffer)
	}
	if d.claim != nil {
		used += d.claim.requested
		for _, b := range d.claim.rest {
			used += b.limit
		}
	}
	return d.cfg.PoolSize - used
}

// Executing returns the Leases of the executing Attempts the Driver renews,
// in job id order: timed-out Attempts are not among them (TimedOut).
func (d *Driver) Executing() []job.Lease {
	out := make([]job.Lease, 0, len(d.executing))
	for _, e := range d.executing {
		out = append(out, e.lease)
	}
	slices.SortFunc(out, compareLeases)
	return out
}

// TimedOut returns the Leases of the Attempts whose handlers ran past their
// timeout and grace, in job id then Attempt order: the Driver no longer
// renews them, but their handlers still occupy Workers until they return.
func (d *Driver) TimedOut() []job.Lease {
	out := make([]job.Lease, 0, len(d.timedOut))
	for l := range d.timedOut {
		out = append(out, l)
	}
	slices.SortFunc(out, compareLeases)
	return out
}

// Held returns how many Workers the node occupies: executing Attempts
// (timed-out ones included) plus buffered plus in-flight outcomes. It never
// exceeds PoolSize.
func (d *Driver) Held() int {
	return len(d.executing) + len(d.timedOut) + len(d.buffer) + d.inReport
}

// Drained reports whether a stopping Driver has nothing left to do: nothing
// executing (timed out or not), buffered, in flight or being claimed.
func (d *Driver) Drained() bool {
	return d.stopping && len(d.executing) == 0 && len(d.timedOut) == 0 &&
		len(d.buffer) == 0 && d.inReport == 0 && d.claim == nil
}

// LeaseDuration returns the length of the Leases the Driver claims and
// renews (Machine).
func (d *Driver) LeaseDuration() time.Duration { return d.cfg.LeaseDuration }

// Finished reports whether a stopping Driver has finished (Machine): the
// same as Drained.
func (d *Driver) Finished() bool { return d.Drained() }

// Stopping reports whether Stop was received.
func (d *Driver) Stopping() bool { return d.stopping }

func (d *Driver) op() OpID {
	d.nextOp++
	return d.nextOp
}

// poll runs a claim pass (or remembers one), then flushes, then runs
// maintenance if due (or continues a purge sweep between beats). The order
// matters: see the package doc.
func (d *Driver) poll(now time.Time, out []Command) []Command {
	out = d.requestPass(out)
	out = d.flush(out)
	if !d.stopping && d.expireOp == 0 &&
		(d.lastMaintenance.IsZero() || now.Sub(d.lastMaintenance) >= d.cfg.MaintenanceInterval) {
		d.lastMaintenance = now
		out = d.expire(out)
		out = d.stampFleet(out)
		return d.maintain(out)
	}
	return d.continueSweeps(out)
}

// requestPass starts a claim pass now or, while one is in flight, fills the
// single pending slot.
func (d *Driver) requestPass(out []Command) []Command {
	if d.stopping {
		return out
	}
	if d.claim != nil {
		d.pendingPoll = true
		return out
	}
	n := min(d.Free(), d.cfg.MaxClaimBatch)
	if n <= 0 {
		return out // Backpressure: no free Worker, no claim.
	}
	if out, hold := d.fleetHold(out); hold {
		return out // the registry's first read comes first (fleet.go)
	}
	if d.wrr == nil {
		d.claim = &pass{op: d.op(), requested: n}
		return append(out, Claim{Op: d.claim.op, Queues: d.queues, Limit: n, LeaseDuration: d.cfg.LeaseDuration, Skip: d.fleet.skip})
	}
	batches, idle := d.wrr.allocate(n)
	for _, b := range idle {
		d.wrr.commit(b)
	}
	d.claim = &pass{rest: batches}
	return d.issueNext(out)
}

// issueNext issues the next Weighted batch of the pass in flight, committing
// its credit, with its own Queue first and the others as fallthrough.
func (d *Driver) issueNext(out []Command) []Command {
	b := d.claim.rest[0]
	d.claim.rest = d.claim.rest[1:]
	d.wrr.commit(b)
	d.claim.op, d.claim.requested = d.op(), b.limit
	queues := make([]string, 0, len(d.queues))
	queues = append(queues, d.queues[b.queue])
	for i, q := range d.queues {
		if i != b.queue {
			queues = append(queues, q)
		}
	}
	return append(out, Claim{Op: d.claim.op, Queues: queues, Limit: b.limit, LeaseDuration: d.cfg.LeaseDuration, Skip: d.fleet.skip})
}

func (d *Driver) claimDone(e ClaimDone, out []Command) []Command {
	if d.claim == nil || e.Op != d.claim.op {
		// Not the claim in flight. The Shell pairs every result with its
		// command, so this is a caller bug; any jobs in it lapse and are
		// reclaimed.
		stray("ClaimDone", e.Op)
		return out
	}
	var handBack []job.Lease
	// The claim's executions share one allocation: a claim of a thousand
	// jobs costs one, not a thousand.
	var slab []execution
	if !d.stopping {
		slab = make([]execution, len(e.Jobs))
	}
	for i, j := range e.Jobs {
		if d.stopping {
			handBack = append(handBack, j.Lease())
			continue
		}
		if old, ok := d.executing[j.ID]; ok {
			// Our earlier Lease on this job lapsed and we claimed it again:
			// the older Attempt is someone else's problem now (it is ours,
			// but fenced out), so forget it.
			out = append(out, Abandon{Lease: old.lease, Reason: AbandonLeaseLost})
		}
		x := &slab[i]
		*x = execution{lease: j.Lease(), wireName: j.WireName, maxAttempts: j.Ceiling(),
			snoozes: j.Snoozes, snoozeCap: d.cfg.snoozeCap(j.WireName),
			timeout: d.cfg.attemptTimeout(j.WireName)}
		if d.planted(plant.SnoozeIgnoresCap) {
			x.snoozeCap = math.MaxInt
		}
		if x.timeout > 0 {
			x.lapseAt = e.Now.Add(x.timeout + d.cfg.AttemptTimeoutGrace)
		}
		d.executing[j.ID] = x
		out = append(out, Execute{Job: j, Timeout: x.timeout})
		if j.CancelRequested {
			// An operator asked the job to stop before this claim (during
			// an earlier Attempt): tell the handler now, not a heartbeat
			// later.
			x.cancelSignalled = true
			out = append(out, SignalCancel{Lease: x.lease})
		}
	}
	if len(handBack) > 0 {
		out = append(out, Relinquish{Op: d.op(), Leases: handBack})
	}
	if e.Err == nil && e.Reopen > 0 && !d.stopping {
		out = d.repollWhenReopened(e.Now, e.Reopen, out)
	}
	if e.Err == nil && len(d.claim.rest) > 0 && !d.stopping {
		return d.issueNext(out)
	}
	d.claim = nil
	if d.pendingPoll {
		d.pendingPoll = false
		out = d.requestPass(out)
	}
	if d.stopping {
		out = d.flush(out)
	}
	return out
}

// repollWhenReopened asks for a Poll when a spent Rate Limit's window
// reopens, after reopen, unless a re-poll at least as soon is pending; a
// purge sweep that answered a full batch asks with reopen 0, at once. The
// store times the window on its clock and the Driver's timers run on the
// node's, but a duration is the same on both: the re-poll lands when the
// window has reopened, give or take the clocks' drift over one window, and
// a re-poll that lands a little early finds a shorter Reopen and asks
// again.
func (d *Driver) repollWhenReopened(now time.Time, reopen time.Duration, out []Command) []Command {
	at := now.Add(reopen)
	if !d.repollAt.IsZero() && !at.Before(d.repollAt) {
		return out
	}
	d.repollAt = at
	return append(out, PollAfter{Delay: reopen})
}

func (d *Driver) heartbeat(now time.Time, out []Command) []Command {
	out = d.flush(out)
	out = d.letLapse(now, out)
	if d.renewOp != 0 || len(d.executing) == 0 {
		return out
	}
	d.renewOp = d.op()
	return append(out, Renew{Op: d.renewOp, Leases: d.Executing(), LeaseDuration: d.cfg.LeaseDuration})
}

// letLapse moves every executing Attempt whose handler is still running at
// or past its timeout plus grace to timedOut, in job id order: it is renewed
// no more, so its Lease lapses and expiry hands the job to another Attempt,
// but it keeps its Worker until its JobDone (see the package doc).
func (d *Driver) letLapse(now time.Time, out []Command) []Command {
	var due []job.Lease
	for _, x := range d.executing {
		if !x.lapseAt.IsZero() && !now.Before(x.lapseAt) {
			due = append(due, x.lease)
		}
	}
	slices.SortFunc(due, compareLeases)
	for _, l := range due {
		x := d.executing[l.ID]
		delete(d.executing, l.ID)
		d.timedOut[l] = x
		out = append(out, LetLapse{Lease: l, Timeout: x.timeout})
	}
	return out
}

func (d *Driver) renewDone(e RenewDone, out []Command) []Command {
	if e.Op != d.renewOp || e.Op == 0 {
		// Not the renewal in flight: a caller bug. Its answers are still
		// read below: each names its Lease, so a stale one changes nothing.
		stray("RenewDone", e.Op)
	} else {
		d.renewOp = 0
	}
	if e.Err != nil {
		return out // Leases may lapse; the next heartbeat tries again.
	}
	for _, r := range e.Results {
		x, ok := d.executing[r.Lease.ID]
		if !ok || x.lease != r.Lease {
			continue // finished or abandoned since the renew was issued
		}
		switch r.Status {
		case store.RenewLost:
			delete(d.executing, r.Lease.ID)
			out = append(out, Abandon{Lease: r.Lease, Reason: AbandonLeaseLost})
		case store.RenewCancelRequested:
			if !x.cancelSignalled {
				x.cancelSignalled = true
				out = append(out, SignalCancel{Lease: r.Lease})
			}
		}
	}
	if len(d.executing) == 0 {
		out = d.flush(out) // went idle
	}
	return out
}

func (d *Driver) jobDone(e JobDone, out []Command) []Command {
	x, ok := d.executing[e.Lease.ID]
	switch {
	case ok && x.lease == e.Lease:
		delete(d.executing, e.Lease.ID)
	case d.timedOut[e.Lease] != nil:
		// A handler that ran past its timeout returned at last: its
		// Worker is free again, and its outcome is reported like any
		// other; the fence rejects it if the job has moved on.
		x = d.timedOut[e.Lease]
		delete(d.timedOut, e.Lease)
	default:
		return out // abandoned: its result is dropped
	}
	d.buffer = append(d.buffer, core.Decide(core.AttemptInfo{
		Lease:           x.lease,
		MaxAttempts:     x.maxAttempts,
		CancelRequested: x.cancelSignalled,
		Snoozes:         x.snoozes,
		MaxSnoozes:      x.snoozeCap,
		SnoozeDelay:     e.Snooze,
	}, e.Result, d.cfg.retryPolicy(x.wireName)))
	if len(d.buffer) >= d.cfg.MaxOutcomeBatch || len(d.executing) == 0 {
		out = d.flush(out)
	}
	return out
}

// flush reports every buffered outcome as one batch.
func (d *Driver) flush(out []Command) []Command {
	if len(d.buffer) == 0 {
		return out
	}
	op := d.op()
	batch := d.buffer
	d.buffer = nil
	d.reporting[op] = batch
	d.inReport += len(batch)
	return append(out, Report{Op: op, Outcomes: batch})
}

func (d *Driver) reportDone(e ReportDone, out []Command) []Command {
	batch, ok := d.reporting[e.Op]
	if !ok {
		stray("ReportDone", e.Op)
		return out
	}
	delete(d.reporting, e.Op)
	d.inReport -= len(batch)
	if errors.Is(e.Err, store.ErrInvalidParams) {
		// The store refused the batch and always will: reporting it again
		// would hold its Leases, and the node's capacity, forever. Drop it;
		// the Leases lapse and expiry hands the jobs to another Attempt.
		return append(out, Forget{Leases: outcomeLeases(batch), Reason: ForgetRefused})
	}
	if e.Err != nil {
		// Fate unknown: report again at the next flush. Older outcomes go
		// first so completion order holds. Not re-flushed here, so a
		// failing store is not spun on.
		d.buffer = append(batch, d.buffer...)
		return out
	}
	out = append(out, Forget{Leases: outcomeLeases(batch), Reason: ForgetReported})
	applied := false
	for _, r := range e.Results {
		applied = applied || r.Applied
	}
	if applied {
		// An applied outcome may have made work due this instant (a freed
		// Concurrency-Limit slot, a released Dependency): re-poll now.
		out = d.requestPass(out)
	}
	return out
}

func (d *Driver) expire(out []Command) []Command {
	d.expireOp = d.op()
	return append(out, ExpireLeases{Op: d.expireOp, Queues: d.queues, Limit: d.cfg.ExpireBatch})
}

func (d *Driver) expireDone(e ExpireDone, out []Command) []Command {
	if e.Op != d.expireOp || e.Op == 0 {
		stray("ExpireDone", e.Op)
		return out
	}
	d.expireOp = 0
	if e.Err != nil || e.Expired == 0 || d.stopping {
		return out
	}
	if d.cfg.ExpireBatch > 0 && e.Expired >= d.cfg.ExpireBatch {
		out = d.expire(out) // a full sweep: more may be waiting
	}
	// Expired jobs are due now.
	return d.requestPass(out)
}

func (d *Driver) stop(out []Command) []Command {
	if d.stopping {
		return out
	}
	d.stopping = true
	d.pendingPoll = false
	d.fleet.waiting = false
	if d.claim != nil {
		d.claim.rest = nil // un-issued batches keep their credit
	}
	return d.flush(out)
}

func (d *Driver) drainTimeout(out []Command) []Command {
	d.stopping = true
	out = d.flush(out)
	// Timed-out Attempts are abandoned but not relinquished: their Leases
	// are no longer renewed, and a timed-out Attempt ends by the lapse,
	// counted like a failure, not handed back for free.
	for _, l := range d.TimedOut() {
		out = append(out, Abandon{Lease: l, Reason: AbandonShutdown})
	}
	clear(d.timedOut)
	leases := d.Executing()
	if len(leases) == 0 {
		return out
	}
	for _, l := range leases {
		out = append(out, Abandon{Lease: l, Reason: AbandonShutdown})
	}
	clear(d.executing)
	return append(out, Relinquish{Op: d.op(), Leases: leases})
}

// stray reports a store command's result event for an operation the Driver
// (or a Walker) does not have in flight: a broken invariant between the
// machine and its caller, which pairs every result with its command. A
// production build drops the event (the machine keeps its state, and any
// Leases the answer carried lapse and are reclaimed); a build with
// invariants checked (package internal/invariants) panics.
func stray(event string, op OpID) {
	if invariants.Enabled {
		invariants.Failf("node: %s for op %d, which is not in flight", event, op)
	}
}

// compareLeases orders Leases by job id, then Attempt.
func compareLeases(a, b job.Lease) int {
	return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Attempt, b.Attempt))
}

// outcomeLeases returns the Leases of a batch of outcomes.
func outcomeLeases(batch []core.Outcome) []job.Lease {
	out := make([]job.Lease, len(batch))
	for i, o := range batch {
		out[i] = o.Lease
	}
	return out
}

// planted reports whether the Driver plants bug b: never, outside a build
// with the tag backwave_plant, where the check folds away.
func (d *Driver) planted(b plant.Bug) bool { return plant.Enabled && d.cfg.plant == b }
