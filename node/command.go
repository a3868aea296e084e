package node

import (
	"fmt"
	"github.com/backwave/backwave/store"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// Command is an output of Driver.Step: inert data the Shell carries out, in
// the order given. Commands that touch the store carry an OpID; the Shell
// feeds the result back as the matching ...Done event.
type Command interface {
	fmt.Stringer
	command()
}

// Claim asks the Shell to call store JobClaim for Worker with these Queues
// (in claim order), Limit and LeaseDuration, then feed back ClaimDone{Op}.
// Queues is the Driver's and shared between commands: read it, never change
// or keep it.
type Claim struct {
	Op            OpID
	Queues        []string
	Limit         int
	LeaseDuration time.Duration
	// Skip are the Wire Names the claim must leave alone
	// (store.ClaimParams.Skip): the fleet registry's judgment (fleet.go).
	// Empty without a registry, or when every live Pump handles what this
	// one does. The Driver's, like Queues.
	Skip []string
}

// Execute asks the Shell to run the handler for the claimed job's Attempt on
// its own goroutine and, when it returns, feed back JobDone with its Result.
// The job's Lease is held; the Driver renews it on heartbeats.
//
// A Timeout above zero is the Attempt's attempt timeout: the Shell cancels
// the handler's context once it is over, with a cause the handler can tell
// from the others, and marks the Failure Detail of an Attempt that then
// fails as timed out. A handler that keeps running past it and the grace
// gets a LetLapse.
type Execute struct {
	Job     job.Job
	Timeout time.Duration
}

// LetLapse tells the Shell the Driver stopped renewing this Attempt's Lease:
// its handler is still running past its Timeout plus the grace
// (Config.AttemptTimeoutGrace), so it ignored its cancelled context. The
// Lease lapses, expiry counts the Attempt like a failure and the job runs
// again elsewhere. The Attempt still occupies a Worker until its handler
// returns: the Shell keeps it, cancels its context (if the Shell's own timer
// has not yet), and feeds back its JobDone as usual; the Driver reports its
// outcome, which the fence rejects once the job has moved on. Nothing is
// written to the store.
type LetLapse struct {
	Lease   job.Lease
	Timeout time.Duration
}

// Renew asks the Shell to call store LeaseRenew for these Leases, then feed
// back RenewDone{Op}. Leases is fresh for each command: the Shell may keep it.
type Renew struct {
	Op            OpID
	Leases        []job.Lease
	LeaseDuration time.Duration
}

// AbandonReason says why the Driver gave up on an executing Attempt.
type AbandonReason uint8

const (
	// AbandonLeaseLost: a renewal found the Lease gone; another node may
	// already own the job.
	AbandonLeaseLost AbandonReason = iota + 1
	// AbandonShutdown: the drain period ran out; the Lease is relinquished.
	AbandonShutdown
)

// String names the reason.
func (r AbandonReason) String() string {
	switch r {
	case AbandonLeaseLost:
		return "lease_lost"
	case AbandonShutdown:
		return "shutdown"
	}
	return "abandon_reason(?)"
}

// Abandon tells the Shell the Driver has forgotten this Attempt: cancel the
// handler's context with Reason as its cause and drop its result (a JobDone
// for it is ignored). Nothing is written to the store.
type Abandon struct {
	Lease  job.Lease
	Reason AbandonReason
}

// SignalCancel tells the Shell an operator asked this job to stop: cancel the
// handler's context. The Attempt stays executing; if the handler then fails,
// its outcome is Cancelled.
type SignalCancel struct {
	Lease job.Lease
}

// Report asks the Shell to call store OutcomeReport with these outcomes (each
// joined with the Failure Detail, Job Output and Tag delta the Shell kept for
// its Lease), then feed back ReportDone{Op}. Outcomes is the Driver's: after
// a failed report it reuses the array, so a Shell that keeps the command past
// its ReportDone (a delayed response) must copy it.
type Report struct {
	Op       OpID
	Outcomes []core.Outcome
}

// ExpireLeases asks the Shell to call store LeaseExpire over these Queues with
// this Limit, then feed back ExpireDone{Op}. Queues is the Driver's and
// shared: read it, never change or keep it.
type ExpireLeases struct {
	Op     OpID
	Queues []string
	Limit  int
}

// Relinquish asks the Shell to call store LeaseRelinquish for these Leases,
// best effort, then feed back RelinquishDone{Op}. Leases is fresh for each
// command: the Shell may keep it.
type Relinquish struct {
	Op     OpID
	Leases []job.Lease
}

// LoadSchedules asks the Shell to call store ScheduleList, load the time
// zone of each schedule, and feed back SchedulesLoaded{Op}.
type LoadSchedules struct {
	Op OpID
}

// Mint asks the Shell to call store ScheduleMint with these plans, then
// feed back MintDone{Op}. Plans is fresh for each command: the Shell may
// keep it.
type Mint struct {
	Op    OpID
	Plans []core.MintPlan
}

// Purge asks the Shell to call store JobPurge for the sweep's States with
// KeepFor and Limit, then feed back PurgeDone{Op}.
type Purge struct {
	Op      OpID
	Sweep   Sweep
	KeepFor time.Duration
	Limit   int
}

// String renders the command for logs and Driver scripts.
func (c LoadSchedules) String() string { return fmt.Sprintf("load-schedules op=%d", c.Op) }

// String renders the command for logs and Driver scripts.
func (c Mint) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mint op=%d", c.Op)
	for _, p := range c.Plans {
		fmt.Fprintf(&b, " %s(rev=%d cursor=%s", p.Schedule, p.Revision, p.Cursor.Format(time.RFC3339))
		for _, m := range p.Mints {
			kind := "mint"
			if m.MakeUp {
				kind = "makeup"
			}
			fmt.Fprintf(&b, " %s@%s", kind, m.At.Format(time.RFC3339))
		}
		for _, s := range p.Skips {
			fmt.Fprintf(&b, " skip-%s@%s", s.Reason, s.At.Format(time.RFC3339))
			if !s.First.Equal(s.At) {
				fmt.Fprintf(&b, "(from %s)", s.First.Format(time.RFC3339))
			}
		}
		b.WriteString(")")
	}
	return b.String()
}

// String renders the command for logs and Driver scripts.
func (c Purge) String() string {
	states := make([]string, 0, 2)
	for _, s := range c.Sweep.States() {
		states = append(states, s.String())
	}
	return fmt.Sprintf("purge op=%d sweep=%s states=%s keep=%v limit=%d", c.Op, c.Sweep, strings.Join(states, ","), c.KeepFor, c.Limit)
}

// ForgetReason says why the Driver is done with a set of Attempts.
type ForgetReason uint8

const (
	// ForgetReported: the store answered the Report that carried their
	// outcomes, applied or fenced out; they are settled.
	ForgetReported ForgetReason = iota + 1
	// ForgetRefused: the store refused the Report that carried their
	// outcomes as invalid and always will (store.ErrInvalidParams). The
	// Driver drops the batch; the Leases lapse and expiry hands the jobs to
	// another Attempt.
	ForgetRefused
)

// String names the reason.
func (r ForgetReason) String() string {
	switch r {
	case ForgetReported:
		return "reported"
	case ForgetRefused:
		return "refused"
	}
	return "forget_reason(?)"
}

// Forget tells the Shell the Driver is done with these finished Attempts: it
// will never name them again, so what the Shell keeps for them (Failure
// Detail, Job Output, Tag delta) must go now. It follows the ReportDone of
// the Report that carried their outcomes, unless that report failed with an
// unknown fate (then the Driver reports them again and they are not
// forgotten). Nothing is written to the store. Leases is the Driver's own
// slice, handed over: the Shell may keep it.
type Forget struct {
	Leases []job.Lease
	Reason ForgetReason
}

// PollAfter asks the Shell to feed a Poll once Delay has passed on its
// clock: a claim found a Queue's Rate Limit spent with due jobs waiting, and
// its window reopens then (ClaimDone.Reopen); or a retention sweep reported
// a full batch, and Delay is 0, so the Poll that re-issues it comes at once
// but after whatever events are already waiting. The Shell keeps one pending
// re-poll and a PollAfter replaces it; the Driver emits one only when none
// is pending or the new one is sooner, so the pending one is always the
// soonest. Between ticks, that is the only extra claim a spent Rate Limit
// costs: the Driver never spins on it. Nothing is written to the store.
type PollAfter struct {
	Delay time.Duration
}

// StoreCommand is a Command carried out by one store call. Caller.Call is the
// one mapping of each to its call and its result; the Shell and the
// Simulator both go through it.
type StoreCommand interface {
	Command
	// OpID is the id the result event must carry.
	OpID() OpID
}

func (Claim) command()         {}
func (Execute) command()       {}
func (LetLapse) command()      {}
func (Renew) command()         {}
func (Abandon) command()       {}
func (SignalCancel) command()  {}
func (Report) command()        {}
func (ExpireLeases) command()  {}
func (Relinquish) command()    {}
func (LoadSchedules) command() {}
func (Mint) command()          {}
func (Purge) command()         {}
func (Forget) command()        {}
func (PollAfter) command()     {}

// OpID implements StoreCommand.
func (c Claim) OpID() OpID { return c.Op }

// OpID implements StoreCommand.
func (c Renew) OpID() OpID { return c.Op }

// OpID implements StoreCommand.
func (c Report) OpID() OpID { return c.Op }

// OpID implements StoreCommand.
func (c ExpireLeases) OpID() OpID { return c.Op }

// OpID implements StoreCommand.
func (c Relinquish) OpID() OpID { return c.Op }

// OpID implements StoreCommand.
func (c LoadSchedules) OpID() OpID { return c.Op }

// OpID implements StoreCommand.
func (c Mint) OpID() OpID { return c.Op }

// OpID implements StoreCommand.
func (c Purge) OpID() OpID { return c.Op }

// String renders the command for logs and Driver scripts.
func (c Forget) String() string {
	return fmt.Sprintf("forget %s reason=%s", leaseList(c.Leases), c.Reason)
}

// String renders the command for logs and Driver scripts.
func (c PollAfter) String() string { return fmt.Sprintf("poll-after delay=%v", c.Delay) }

// String renders the command for logs and Driver scripts.
func (c Claim) String() string {
	s := fmt.Sprintf("claim op=%d queues=%s limit=%d lease=%v", c.Op, strings.Join(c.Queues, ","), c.Limit, c.LeaseDuration)
	if len(c.Skip) > 0 {
		s += " skip=" + strings.Join(c.Skip, ",")
	}
	return s
}

// String renders the command for logs and Driver scripts.
func (c Execute) String() string {
	s := fmt.Sprintf("execute %s queue=%s wire=%s", c.Job.Lease(), c.Job.Queue, c.Job.WireName)
	if c.Timeout > 0 {
		s += fmt.Sprintf(" timeout=%v", c.Timeout)
	}
	return s
}

// String renders the command for logs and Driver scripts.
func (c LetLapse) String() string { return fmt.Sprintf("let-lapse %s timeout=%v", c.Lease, c.Timeout) }

// String renders the command for logs and Driver scripts.
func (c Renew) String() string {
	return fmt.Sprintf("renew op=%d leases=%s", c.Op, leaseList(c.Leases))
}

// String renders the command for logs and Driver scripts.
func (c Abandon) String() string { return fmt.Sprintf("abandon %s reason=%s", c.Lease, c.Reason) }

// String renders the command for logs and Driver scripts.
func (c SignalCancel) String() string { return fmt.Sprintf("signal-cancel %s", c.Lease) }

// String renders the command for logs and Driver scripts.
func (c Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "report op=%d", c.Op)
	for _, o := range c.Outcomes {
		fmt.Fprintf(&b, " %s:%s", o.Lease, o.State)
		switch {
		case o.Via == core.ViaSnooze:
			fmt.Fprintf(&b, "+%v(snooze)", o.RetryDelay)
		case o.State == job.StateScheduled:
			fmt.Fprintf(&b, "+%v(%s)", o.RetryDelay, o.RetryCause)
		case o.TerminalCause != job.TerminalCauseNone:
			fmt.Fprintf(&b, "(%s)", o.TerminalCause)
		}
	}
	return b.String()
}

// String renders the command for logs and Driver scripts.
func (c ExpireLeases) String() string {
	return fmt.Sprintf("expire-leases op=%d queues=%s limit=%d", c.Op, strings.Join(c.Queues, ","), c.Limit)
}

// String renders the command for logs and Driver scripts.
func (c Relinquish) String() string {
	return fmt.Sprintf("relinquish op=%d leases=%s", c.Op, leaseList(c.Leases))
}

func leaseList(ls []job.Lease) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, ",")
}

// # The Fleet registry

// StampFleet asks the Shell to call store FleetStamp for Worker with these
// Wire Names and Forget horizon, then feed back FleetStamped{Op} with the
// registry it answered. WireNames is the Driver's: read it, never change or
// keep it.
type StampFleet struct {
	Op        OpID
	WireNames []string
	Forget    time.Duration
}

func (StampFleet) command() {}

// OpID implements StoreCommand.
func (c StampFleet) OpID() OpID { return c.Op }

// String renders the command for logs and Driver scripts.
func (c StampFleet) String() string {
	return fmt.Sprintf("stamp-fleet op=%d wire=%s forget=%v", c.Op, strings.Join(c.WireNames, ","), c.Forget)
}

// # A Transition Observer's walk (the Walker, observer.go)

// WalkClaim asks the Shell to call store ObserverClaim for the node (as
// holder) with these params, then feed back WalkClaimDone{Op}.
type WalkClaim struct {
	Op            OpID
	Observer      string
	States        []job.State
	Limit         int
	LeaseDuration time.Duration
	// StartAtEnd registers a new Observer at the end of the Transition
	// Log (store.ObserverClaimParams.StartAtEnd).
	StartAtEnd bool
}

// WalkAdvance asks the Shell to call store ObserverAdvance for the node,
// then feed back WalkAdvanceDone{Op}.
type WalkAdvance struct {
	Op            OpID
	Observer      string
	Token         int64
	To            store.ObserverPosition
	LeaseDuration time.Duration
	Release       bool
}

// Deliver asks the Shell to run the observer's callback with Transition on
// its own goroutine and, when it returns, feed back Delivered. A callback
// that fails or panics is a failed delivery. Nothing is written to the
// store.
type Deliver struct {
	Observer   string
	Transition store.ObservedTransition
}

func (WalkClaim) command()   {}
func (WalkAdvance) command() {}
func (Deliver) command()     {}

// OpID implements StoreCommand.
func (c WalkClaim) OpID() OpID { return c.Op }

// OpID implements StoreCommand.
func (c WalkAdvance) OpID() OpID { return c.Op }

// String renders the command for logs and scripts.
func (c WalkClaim) String() string {
	s := fmt.Sprintf("walk-claim op=%d observer=%s limit=%d lease=%v", c.Op, c.Observer, c.Limit, c.LeaseDuration)
	if c.StartAtEnd {
		s += " start=end"
	}
	return s
}

// String renders the command for logs and scripts.
func (c WalkAdvance) String() string {
	s := fmt.Sprintf("walk-advance op=%d observer=%s token=%d to=%s", c.Op, c.Observer, c.Token, c.To)
	if c.Release {
		s += " release"
	}
	return s
}

// String renders the command for logs and scripts.
func (c Deliver) String() string {
	t := c.Transition
	return fmt.Sprintf("deliver observer=%s at=%s job=%d %s→%s attempt=%d", c.Observer, t.Position, t.Job, t.From, t.State, t.Attempt)
}
