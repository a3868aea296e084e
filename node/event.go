package node

import (
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// OpID pairs a store command with the event that reports its result. The
// Driver numbers its commands from 1; the Shell copies the id onto the result
// event.
type OpID uint64

// Event is an input to Driver.Step: the Shell's report of what happened. Every
// event carries Now, the node's clock reading, which only paces the node's own
// cadence (maintenance) and times its Attempts (attempt timeouts); lease and
// due decisions use the store's clock.
type Event interface {
	// At returns the event's Now.
	At() time.Time
}

// Poll is the poll ticker firing, or a Wake-Up Hint. The Shell coalesces both
// through one pending slot, so a hint is only ever an earlier Poll. The Driver
// starts a claim pass (or, while one is in flight, remembers one more), flushes
// buffered outcomes and runs maintenance when it is due.
type Poll struct{ Now time.Time }

// Hint is a Wake-Up Hint the Shell took from its one pending slot: an
// earlier Poll, taken only when the node is not stopping and has a free
// Worker. Without capacity the Driver drops it: a claim now would claim
// nothing, and the Poll that follows a freed slot finds the work. Dropping
// it costs latency only, never a job (glossary: Wake-Up Hint).
type Hint struct{ Now time.Time }

// Heartbeat is the heartbeat ticker firing. The Driver flushes buffered
// outcomes, stops renewing the Leases of Attempts past their timeout and
// grace (LetLapse), and renews the Leases of every other executing job.
type Heartbeat struct{ Now time.Time }

// ClaimDone reports the result of a Claim command. Its Now starts the
// attempt timeout of each job it leased.
type ClaimDone struct {
	Now time.Time
	Op  OpID
	// Jobs are the jobs leased, Attempt charged.
	Jobs []job.Job
	// Reopen is the store's word on its Rate Limits (store.ClaimParams
	// Reopen): how long until the earliest window of a rated Queue the
	// claim asked reopens, when that Queue still has due jobs its Rate
	// withheld; zero if none did. The Driver re-polls then (PollAfter).
	Reopen time.Duration
	// Err is set when the claim failed; Jobs is then empty.
	Err error
}

// RenewDone reports the result of a Renew command.
type RenewDone struct {
	Now     time.Time
	Op      OpID
	Results []store.RenewResult
	Err     error
}

// JobDone reports that the handler of one Attempt returned (or panicked, or
// could not be run). Only the Result crosses into the Driver; Failure Detail,
// Job Output and Tag deltas stay in the Shell, keyed by the Lease.
type JobDone struct {
	Now    time.Time
	Lease  job.Lease
	Result core.Result
	// Snooze is, for core.ResultSnoozed, the delay the handler asked for;
	// the Shell checked it (core.CheckSnoozeDelay) and reports a bad one
	// as a failure.
	Snooze time.Duration
}

// ReportDone reports the result of a Report command: which outcomes the store
// applied and which the fence rejected as stale.
type ReportDone struct {
	Now     time.Time
	Op      OpID
	Results []store.ReportResult
	// Err means the report's fate is unknown; the Driver buffers its outcomes
	// again and reports them at the next flush (the fence makes a repeat of
	// an applied outcome harmless: it comes back stale). An Err wrapping
	// store.ErrInvalidParams is permanent: the Driver drops the batch and
	// lets its Leases lapse.
	Err error
}

// ExpireDone reports the result of an ExpireLeases command.
type ExpireDone struct {
	Now time.Time
	Op  OpID
	// Expired is how many Leases the sweep ended.
	Expired int
	Err     error
}

// RelinquishDone reports the result of a Relinquish command.
type RelinquishDone struct {
	Now time.Time
	Op  OpID
	Err error
}

// Stop begins a graceful shutdown: the Driver claims nothing more, flushes
// what it buffered, reports each Attempt that finishes at once, and hands back
// jobs a claim still in flight returns.
type Stop struct{ Now time.Time }

// DrainTimeout says the drain period after Stop is over: the Driver abandons
// every job still executing (their handlers are cancelled with a shutdown
// cause and their results ignored) and relinquishes their Leases.
type DrainTimeout struct{ Now time.Time }

// LoadedSchedule is one stored Recurring Schedule with its time zone,
// loaded by the Shell (zone data is I/O). A nil Location means the zone
// could not be loaded: the Driver leaves the schedule alone.
type LoadedSchedule struct {
	Schedule store.Schedule
	Location *time.Location
}

// SchedulesLoaded reports the result of a LoadSchedules command.
type SchedulesLoaded struct {
	Now time.Time
	Op  OpID
	// StoreNow is the store's clock at the load: minting plans by it, so
	// every node's plan agrees whatever its own clock's skew.
	StoreNow  time.Time
	Schedules []LoadedSchedule
	Err       error
}

// MintDone reports the result of a Mint command.
type MintDone struct {
	Now     time.Time
	Op      OpID
	Results []store.MintResult
	Err     error
}

// PurgeDone reports the result of a Purge command.
type PurgeDone struct {
	Now    time.Time
	Op     OpID
	Purged int
	Err    error
}

// At implements Event.
func (e SchedulesLoaded) At() time.Time { return e.Now }

// At implements Event.
func (e MintDone) At() time.Time { return e.Now }

// At implements Event.
func (e PurgeDone) At() time.Time { return e.Now }

// At implements Event.
func (e Poll) At() time.Time { return e.Now }

// At implements Event.
func (e Hint) At() time.Time { return e.Now }

// At implements Event.
func (e Heartbeat) At() time.Time { return e.Now }

// At implements Event.
func (e ClaimDone) At() time.Time { return e.Now }

// At implements Event.
func (e RenewDone) At() time.Time { return e.Now }

// At implements Event.
func (e JobDone) At() time.Time { return e.Now }

// At implements Event.
func (e ReportDone) At() time.Time { return e.Now }

// At implements Event.
func (e ExpireDone) At() time.Time { return e.Now }

// At implements Event.
func (e RelinquishDone) At() time.Time { return e.Now }

// At implements Event.
func (e Stop) At() time.Time { return e.Now }

// At implements Event.
func (e DrainTimeout) At() time.Time { return e.Now }

// # The Fleet registry

// FleetStamped reports the result of a StampFleet: the registry's rows and
// the store's clock they were read at.
type FleetStamped struct {
	Now      time.Time
	Op       OpID
	StoreNow time.Time
	Handlers []core.HandlerStamp
	// Err is set when the stamp failed; nothing else is then.
	Err error
}

// At implements Event.
func (e FleetStamped) At() time.Time { return e.Now }

// # A Transition Observer's walk (the Walker, observer.go)

// WalkTick is the Shell's walk ticker firing (WalkerConfig.Tick).
type WalkTick struct{ Now time.Time }

// WalkClaimDone reports the result of a WalkClaim.
type WalkClaimDone struct {
	Now    time.Time
	Op     OpID
	Result store.ObserverClaimResult
	Err    error
}

// WalkAdvanceDone reports the result of a WalkAdvance.
type WalkAdvanceDone struct {
	Now time.Time
	Op  OpID
	Err error
}

// Delivered reports that the callback of a Deliver returned: Failed when it
// returned an error or panicked (the error stays in the Shell, which logs
// it).
type Delivered struct {
	Now      time.Time
	Position store.ObserverPosition
	Failed   bool
}

// At implements Event.
func (e WalkTick) At() time.Time { return e.Now }

// At implements Event.
func (e WalkClaimDone) At() time.Time { return e.Now }

// At implements Event.
func (e WalkAdvanceDone) At() time.Time { return e.Now }

// At implements Event.
func (e Delivered) At() time.Time { return e.Now }
