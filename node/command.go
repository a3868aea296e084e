package node

import (
	"fmt"
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
type Claim struct {
	Op            OpID
	Queues        []string
	Limit         int
	LeaseDuration time.Duration
}

// Execute asks the Shell to run the handler for the claimed job's Attempt on
// its own goroutine and, when it returns, feed back JobDone with its Result.
// The job's Lease is held; the Driver renews it on heartbeats.
type Execute struct {
	Job job.Job
}

// Renew asks the Shell to call store LeaseRenew for these Leases, then feed
// back RenewDone{Op}.
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
// its Lease), then feed back ReportDone{Op}.
type Report struct {
	Op       OpID
	Outcomes []core.Outcome
}

// ExpireLeases asks the Shell to call store LeaseExpire over these Queues with
// this Limit, then feed back ExpireDone{Op}.
type ExpireLeases struct {
	Op     OpID
	Queues []string
	Limit  int
}

// Relinquish asks the Shell to call store LeaseRelinquish for these Leases,
// best effort, then feed back RelinquishDone{Op}.
type Relinquish struct {
	Op     OpID
	Leases []job.Lease
}

func (Claim) command()        {}
func (Execute) command()      {}
func (Renew) command()        {}
func (Abandon) command()      {}
func (SignalCancel) command() {}
func (Report) command()       {}
func (ExpireLeases) command() {}
func (Relinquish) command()   {}

// String renders the command for logs and Driver scripts.
func (c Claim) String() string {
	return fmt.Sprintf("claim op=%d queues=%s limit=%d lease=%v", c.Op, strings.Join(c.Queues, ","), c.Limit, c.LeaseDuration)
}

// String renders the command for logs and Driver scripts.
func (c Execute) String() string {
	return fmt.Sprintf("execute %s queue=%s wire=%s", c.Job.Lease(), c.Job.Queue, c.Job.WireName)
}

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
		if o.State == job.StateScheduled {
			fmt.Fprintf(&b, "+%v(%s)", o.RetryDelay, o.RetryCause)
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
