// Package store is the Storage Contract: the semantics every BackWave store
// guarantees, written as Go interfaces whose doc comments are the rules. The
// Conformance Suite (store/storetest) holds every adapter to them; the
// In-Memory Store (store/memstore) is the executable reference.
//
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
//
// # Clocks
//
// Lease and due comparisons use the store's clock: the database server's for
// PostgreSQL, the host's for SQLite, the virtual clock for memstore. A node's
// clock only paces its own timers. Durations (lease length, retry delay) are
// therefore passed as durations and added to the store's clock when applied.
//
// # The fence
//
// Every write a worker makes about a job it claimed — renew, outcome,
// Relinquish — names the (WorkerID, Attempt) pair the claim produced. A store
// applies it only if the job is still Running under exactly that worker and
// Attempt; otherwise the write mutates nothing and is reported as stale. This
// is the Effect-Once guarantee: a late write from a node isolated past its
// Lease is harmless.
//
// # Atomicity
//
// Each method call is atomic with respect to every other call on any store
// instance over the same data: a claim charges the Attempt, leases the job and
// takes a Concurrency-Limit slot in one step; an applied outcome moves the
// state, records the Retry Cause and frees the slot in one step.
//
// # Rate Limit
//
// A Queue's Rate Limit (QueueRate) caps how many of its jobs start — are
// claimed — per Period, cluster-wide: at most Limit claims per fixed window
// of Period, enforced at claim in the store, never by a node's timer. It is
// a time-based cap, neither the Concurrency Limit (how many Run at once) nor
// Backpressure (a node's own pool); a claim takes from a Queue only what all
// three allow.
//
// The window rule: the store's clock is cut into windows of length Period
// aligned to the Unix epoch, window k covering [epoch + k·Period,
// epoch + (k+1)·Period). Each claimed job counts once, in the window that
// holds the store's now at its claim, whatever becomes of its Attempt (a
// retry, an expired Lease or a Relinquish gives nothing back); a claim
// leases from a rated Queue no more jobs than leave that window's count at
// or below Limit (QueueRate.Budget). Windows are fixed, so up to
// 2·Limit starts may fall within one Period straddling a window boundary;
// within each window, never more than Limit. The count is exact under any
// number of concurrent claimers: claims that may take from a rated Queue
// are serialized on that Queue, as for a Concurrency Limit.
//
// A claim a Rate Limit stopped — a rated Queue it asked still had a due job
// when its window's budget ran out — says when to ask again: ClaimParams.
// Reopen receives how long from the store's now until the earliest such
// window ends, and the Node Driver re-polls then (node.PollAfter) instead
// of spinning on its poll ticker.
//
// # Batches
//
// Every method that takes a list does the whole list in one round trip. Rows
// in a batch are independent: one stale outcome does not stop the others.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// Sentinel errors of the Storage Contract. Adapters wrap them with context;
// callers test with errors.Is.
var (
	// ErrNotFound: no job, queue or schedule with that identity.
	ErrNotFound = errors.New("store: not found")
	// ErrStaleLease: a fenced write named a (worker, Attempt) that no longer
	// holds the job. Batch methods report staleness per row instead.
	ErrStaleLease = errors.New("store: stale lease")
	// ErrInvalidParams: the params break a documented precondition (empty
	// Wire Name, negative limit, …). Nothing was written.
	ErrInvalidParams = errors.New("store: invalid params")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrIllegalTransition: an Operator Action asked for a state change the
	// job's current state does not allow (e.g. requeue a Succeeded job).
	ErrIllegalTransition = errors.New("store: illegal transition")
	// ErrSchemaTooNew: the database holds a schema newer than this build
	// knows; the store refuses to run against it.
	ErrSchemaTooNew = errors.New("store: schema is newer than this version of BackWave")
	// ErrSchemaTooOld: the database's schema lacks what the call needs
	// (e.g. the Concurrency Key column before its migration ran); nothing
	// was written.
	ErrSchemaTooOld = errors.New("store: schema is older than this feature needs; run the migrations")
	// ErrUnknownScheme: Open was given a URI whose scheme no adapter
	// registered.
	ErrUnknownScheme = errors.New("store: unknown URI scheme")
)

// Store is the whole Storage Contract. An adapter implements all of it.
type Store interface {
	Inserter
	Worker
	Queues
	Monitor
	Backlog
	History
	Operator
	Dependencies
	Workflows
	Schedules
	Retention
	Observers
	Fleet
	Nodes
	// Close releases the store's resources. Calls after Close fail with
	// ErrClosed.
	Close() error
}

// Inserter adds jobs.
type Inserter interface {
	// JobInsertMany inserts every job in one atomic step and returns their
	// ids in input order. A job with a zero ScheduledAt is due at the store's
	// clock now. Validation failures (ErrInvalidParams) insert nothing.
	//
	// A job whose Dependency names parents is inserted Awaiting Parent, and
	// in the same step its latch counts every parent that is terminal
	// already (core.AfterParent): it may leave at once, released to
	// Scheduled or cancelled by a failed on-success parent, and a cancel
	// reaches its own dependents in the batch. Ids are assigned in
	// InsertOrder, so every parent's id is below its dependents'. A parent
	// cycle (ErrDependencyCycle) or an Existing parent the store does not
	// hold (ErrUnknownParent) inserts nothing.
	//
	// A job with a unique key whose key is held is not inserted; its place
	// in the result holds the holder's id (JobInsertManyResults).
	JobInsertMany(ctx context.Context, p InsertManyParams) ([]job.ID, error)

	// JobInsertManyResults is JobInsertMany answering per job, in input
	// order: the id, and whether the job was inserted.
	//
	// A job whose NewJob.Unique names a key is inserted only if no job
	// holds that key, and then holds it itself: under UniqueWhileLive until
	// it first ends terminal, under UniquePeriod until Period has passed on
	// the store's clock since its insert, whatever its state. If the key is
	// held, nothing is inserted for the job, and its result is the
	// holder's id with Inserted false: a held key is a result, not an
	// error. Keys form one namespace across both scopes: a held key is
	// held for every newcomer, whatever scope the newcomer asks. Within one
	// batch the first job with a key in InsertOrder (input order unless a
	// job names an in-batch parent) is the candidate, and every later one
	// conflicts with it. Once free, a key is free for good:
	// an operator requeue brings a job back without the key it held.
	//
	// A job whose Unique.Mode rewrites (UniqueReplace, UniqueDebounce)
	// and finds its key held rewrites the holder instead, in the same
	// atomic step: a Scheduled holder takes the job's payload (through
	// PayloadFor under the holder's id), its Tags (as a set, replacing the
	// holder's) and the due time Unique.RewriteDue gives from the holder's
	// insert time, and the result is the holder's id with Replaced true.
	// Its state, Attempt, Queue, Wire Name, attempt ceiling, trace context
	// and Transition Log are kept: a rewrite is no state change, and the
	// Core reads nothing of it but the due time. A holder in any other
	// state fails the whole insert with ErrHolderNotPending: nothing is
	// written. A later job of the same batch with the key rewrites the
	// earlier one. Racing rewrites of one key apply one after the other in
	// the store's commit order: the last to commit wins.
	//
	// The rule holds under every concurrency: of any number of inserts of
	// one free key racing on any store instances over the same data,
	// exactly one inserts its job. Adapters enforce it by a unique index,
	// never by reading the key before writing it.
	JobInsertManyResults(ctx context.Context, p InsertManyParams) ([]InsertResult, error)
}

// Worker is what a node's Pump calls: claim, renew, report, expire,
// Relinquish.
type Worker interface {
	// JobClaim leases up to Limit due jobs to Worker and returns them with
	// their Attempt already charged (Attempt+1 durably, before any handler
	// runs) and their Lease running until the store's now + LeaseDuration.
	//
	// Queues are taken in the given order: every due job of Queues[0] (in
	// due-time order, ties by id) before any of Queues[1], and so on. A
	// Strict Dispatch Policy passes its whole ordered list; a Weighted one
	// passes its allocated Queue first and the rest as fallthrough. Paused
	// Queues are skipped. A Queue with a Concurrency Limit yields only as many
	// jobs as leave its Running count at or below the limit, counted across
	// every worker on every node. A Queue with a Rate Limit yields only as
	// many jobs as leave its window's count at or below the Rate's Limit (see
	// Rate Limit in the package doc), and when it withholds a due job the
	// claim reports, through p.Reopen, when its window ends. A job whose
	// Wire Name is in p.Skip is passed over as if it were not due: it is
	// neither leased nor counted against the batch, a Concurrency Limit or
	// a Rate Limit. Concurrent claimers never lease one job twice.
	JobClaim(ctx context.Context, p ClaimParams) ([]job.Job, error)

	// LeaseRenew extends each named Lease still held by Worker to the store's
	// now + LeaseDuration and answers per Lease, in input order: renewed,
	// lost (the job is no longer Running under this worker and Attempt), or
	// cancel requested (renewed, and an operator asked the job to stop).
	// Each of p.Progress whose Lease it renews (renewed or cancel
	// requested) becomes the job's progress, stamped with the store's now,
	// atomically with the renewal; one whose Lease is lost changes nothing
	// (the same (worker, Attempt) fence as every write). Each of p.Cursors
	// whose Lease it renews becomes the job's Cursor (job.Job.Cursor),
	// saved by that Attempt and stamped with the store's now, atomically
	// with the renewal; one whose Lease is lost changes nothing, so a
	// Cursor from a stale Attempt is never stored. A Cursor over
	// MaxCursorBytes fails the whole call with ErrInvalidParams.
	LeaseRenew(ctx context.Context, p RenewParams) ([]RenewResult, error)

	// OutcomeReport applies a batch of Attempt outcomes, each fenced by
	// (Worker, Attempt): a row whose job is no longer Running under that
	// worker and Attempt mutates nothing and is answered Applied=false. An
	// applied row, atomically: moves the job to the outcome's state (a retry
	// becomes due at the store's now + RetryDelay), sets the Retry Cause as
	// core.RetryCauseAfter says (a retry sets handler failed; every other
	// outcome keeps the stored cause), records the Transition
	// Log entry with its Failure Detail, stores Job Output, merges the Tag
	// delta, stores the outcome's Cursor (if it carries one) as the job's
	// Cursor, and frees the Queue's Concurrency-Limit slot. Results are in
	// input order. A job's Cursor outlives every outcome, a lost Lease and
	// a Relinquish alike: only a later Attempt's fenced save replaces it.
	//
	// A snooze (core.ViaSnooze) becomes due at the store's now + RetryDelay
	// like a retry, keeps the Retry Cause, adds one to the job's Snoozes and
	// one to its AttemptBase, so the Attempt it used is not charged against
	// the attempt budget (job.Job.Ceiling moves up by one); a snooze whose
	// delay core.CheckSnoozeDelay refuses fails the call with
	// ErrInvalidParams. A recorded cancel wins over a snooze as over any
	// outcome.
	//
	// A recorded cancel wins: if an operator's cancel of the job was
	// recorded (CancelRequested) before the outcome applies, the job ends
	// Cancelled with cancel cause operator whatever the outcome says —
	// success, retry, dead-letter or quarantine (core.UnderCancel). The
	// Failure Detail and Tag delta still apply; Job Output does not, since
	// it is written only with a Succeeded transition.
	//
	// Every path that makes a job terminal — an applied outcome here, a
	// LeaseExpire or LeaseRelinquish that dead-letters or cancels, an
	// operator cancel, a parent-failure cancel — counts the job against
	// each of its dependents' latches in the same atomic step, as
	// core.AfterParent says: a dependent whose latch reaches zero becomes
	// Scheduled and due, an on-success dependent of a parent that did not
	// succeed becomes Cancelled with cause parent failure, recursively.
	// Each edge is counted once ever; a stale outcome counts nothing.
	OutcomeReport(ctx context.Context, p ReportParams) ([]ReportResult, error)

	// LeaseExpire finds Running jobs in the given Queues whose Lease lapsed
	// at the store's clock and ends each Lease as core.AfterLeaseLoss says:
	// Dead-Lettered at the attempt ceiling, otherwise Scheduled and due now
	// with Retry Cause lease expired. Slots are freed. At most Limit jobs
	// are expired per call (0 means no bound); the result says how many.
	// A job whose cancel was requested ends Cancelled instead
	// (core.AfterLeaseLoss): the operator asked that it not run again.
	LeaseExpire(ctx context.Context, p ExpireParams) (ExpireResult, error)

	// LeaseRelinquish hands live Leases back on clean shutdown, each fenced
	// by (Worker, Attempt): the job returns to Scheduled due at once with its
	// Attempt kept and its Retry Cause untouched, or dead-letters if the
	// Attempt was its last, or ends Cancelled if its cancel was requested
	// (core.AfterLeaseLoss). Slots are freed. Stale Leases are skipped.
	LeaseRelinquish(ctx context.Context, p RelinquishParams) (RelinquishResult, error)
}

// Queues reads and changes Queue settings. A Queue exists once a job names
// it or a setting is written for it. Pause, resume, set-limit, set-rate and the
// three key-policy settings (set-key-limit, set-key-rate, set-fair-claim) are
// Operator Actions, and so is removing an empty Queue (QueueRemove): each writes an audit record (AuditEntry) with its Actor
// atomically with the setting.
type Queues interface {
	// QueuePause stops claims from the Queue (running jobs are unaffected).
	QueuePause(ctx context.Context, p QueueParams) error
	// QueueResume lets claims from the Queue start again.
	QueueResume(ctx context.Context, p QueueParams) error
	// QueueSetLimit sets the Queue's cluster-wide Concurrency Limit; a
	// Limit of 0 removes it. A lowered limit never revokes a Lease; it stops
	// claims until Running drops below it.
	QueueSetLimit(ctx context.Context, p QueueSetLimitParams) error
	// QueueSetRate sets the Queue's cluster-wide Rate Limit; the zero
	// QueueRate removes it. A new Limit under the same Period keeps the
	// current window's count (a lowered Limit stops claims for the rest of
	// the window); a new Period, or a removed Rate, starts the count afresh.
	// It never revokes a Lease.
	QueueSetRate(ctx context.Context, p QueueSetRateParams) error
	// QueueSetKeyLimit sets the Queue's Key Limit (KeyPolicy); a Limit of 0
	// removes it. A Limit above the Queue's Concurrency Limit is refused
	// (ValidateKeyLimit) and nothing is stored or audited. A lowered Key
	// Limit never revokes a Lease; it stops the key's claims until its
	// Running count drops below it.
	QueueSetKeyLimit(ctx context.Context, p QueueSetKeyLimitParams) error
	// QueueSetKeyRate sets the Queue's Key Rate (KeyPolicy); the zero
	// QueueRate removes it. As for QueueSetRate, a new Limit under the same
	// Period keeps every key's current window count; a new Period, or a
	// removed Key Rate, starts every key's count afresh. A store whose
	// schema cannot hold a job's Concurrency Key refuses it with
	// ErrSchemaTooOld, storing nothing.
	QueueSetKeyRate(ctx context.Context, p QueueSetKeyRateParams) error
	// QueueSetFairClaim turns the Queue's Fair Claim (KeyPolicy) on or off.
	QueueSetFairClaim(ctx context.Context, p QueueSetFairClaimParams) error
	// QueueList returns every known Queue with its settings and counts,
	// ordered by name.
	QueueList(ctx context.Context) ([]QueueInfo, error)
	// QueueRemove removes an empty Queue, atomically with its audit record
	// (AuditQueueRemove): every setting written for it goes (pause,
	// Concurrency Limit, Rate Limit and its window, Key Limit, Key Rate,
	// Fair Claim and their per-key rows, and any other per-Queue row the
	// adapter keeps), and QueueList no longer shows it. The rule of which
	// Queue may go is CheckQueueEmpty's, stated there once: a Queue holding
	// any job, in any state, is refused with an error wrapping
	// ErrQueueNotEmpty and nothing changes. An unknown Queue is
	// ErrNotFound. A job enqueued to the name afterwards makes it known
	// again, with no settings. It is serialized against concurrent inserts
	// into the Queue: a job committed by an insert the removal did not see
	// never lands in a removed Queue's place unknown.
	QueueRemove(ctx context.Context, p QueueParams) error
}

// Monitor is the read side operators and tests use.
type Monitor interface {
	// JobGet returns one job or ErrNotFound.
	JobGet(ctx context.Context, id job.ID) (job.Job, error)
	// JobList returns jobs matching the filter, newest id first, one page at
	// a time (keyset pagination on id).
	JobList(ctx context.Context, p JobListParams) ([]job.Job, error)
	// JobCountByState counts jobs per state, optionally in one Queue. It
	// reads counters the store keeps as jobs move (never a COUNT over the
	// job table), so it stays cheap at any table size.
	JobCountByState(ctx context.Context, p CountParams) (map[job.State]int, error)
	// JobCountByQueue counts jobs per Queue and state from the same
	// counters, ordered by Queue then state; zero counts are absent.
	JobCountByQueue(ctx context.Context) ([]QueueStateCount, error)
	// TagFacet returns the Tag Facet of the filtered slice: the Tags its
	// jobs carry, with how many jobs carry each, highest count first (ties
	// by Tag), capped to the top p.BucketLimit(). Deliberately not an
	// inventory of Tags (glossary, Tag Facet).
	TagFacet(ctx context.Context, p TagFacetParams) ([]TagCount, error)
	// TagSuggest completes a prefix over every Tag in the store,
	// case-insensitively, ordered lexicographically (CompareSuggestions),
	// each in its canonical stored casing so a filter built from it matches
	// exactly. It never filters jobs (glossary, Tag Suggest), and it never
	// offers a Tag no stored job carries: when JobPurge removes the last job
	// carrying a Tag, the Tag leaves the suggestions with it.
	TagSuggest(ctx context.Context, p TagSuggestParams) ([]job.Tag, error)
	// AuditList returns the audit trail of Operator Actions, newest first,
	// one page at a time (keyset pagination on the entry id).
	AuditList(ctx context.Context, p AuditListParams) ([]AuditEntry, error)
	// QueueKeys returns the Concurrency Keys of one Queue with the most
	// Scheduled and Running jobs together, most first (ties by key;
	// SortKeyCounts), at most p.KeyLimit() of them; jobs without a key
	// count as the key "". Keys with no Scheduled or Running job are
	// absent. It reads per-key counters the store keeps as jobs move (or an
	// index over live jobs by key), never a scan of the Queue's jobs, so it
	// stays cheap at any table size. An unknown Queue has no keys.
	QueueKeys(ctx context.Context, p QueueKeysParams) ([]KeyCount, error)
}

// NewJob is one job to insert.
type NewJob struct {
	// WireName is the job type's explicit, stable identity. Required.
	WireName string
	// Queue is required.
	Queue string
	// Payload is the encoded job arguments, opaque to the store.
	Payload []byte
	// ScheduledAt is the due time; zero means the store's now. It must lie
	// in years MinYear to MaxYear (UTC).
	ScheduledAt time.Time
	// MaxAttempts is the attempt ceiling; at least 1.
	MaxAttempts int
	// Tags are stored as a set.
	Tags []job.Tag
	// Dependency, if it names parents, makes the job wait in Awaiting
	// Parent until its latch has counted every parent (see Dependency).
	Dependency Dependency
	// Unique, if it names a key, inserts the job only if no other job
	// holds that key (see Inserter.JobInsertManyResults). A job with a
	// unique key may have parents, but no job of its own batch may name it
	// as one.
	Unique Unique
	// TraceContext is the job's trace context (see job.Job.TraceContext),
	// stored as given and returned on every read of the job; nil or empty
	// stores none. It is bounded by MaxTraceContextBytes.
	TraceContext map[string]string
	// ConcurrencyKey is the job's Concurrency Key: "" is none, otherwise
	// at most MaxConcurrencyKeyBytes (ValidateConcurrencyKey). The claim
	// reads it under the Queue's KeyPolicy.
	ConcurrencyKey string
}

// InsertManyParams are the params of Inserter.JobInsertMany.
type InsertManyParams struct {
	Jobs []NewJob
	// PayloadFor, if set, gives the payload the store writes for job i of
	// Jobs in place of Jobs[i].Payload, now that the store has assigned it
	// id: an insert whose payload depends on the job's own id (Encryption
	// at Rest binds it in). The store calls it once per job it inserts,
	// inside the insert's atomic step and before the insert is visible,
	// with the id the job is inserted under; it may also call it for a job
	// it then does not insert (its unique key was held), and discards that
	// payload. A nil or empty result stores no payload. An error aborts
	// the whole insert: nothing is written and the error is returned
	// wrapped. Jobs[i].Payload is what Validate checks.
	PayloadFor func(i int, id job.ID) ([]byte, error)
	// Actor, if set, makes the insert an Operator Action, an operator's
	// enqueue (Admin.Enqueue, the dashboard's enqueue form): each job it
	// inserts is recorded in the audit trail as AuditEnqueue by Actor, in
	// the insert's atomic step, its Detail the Wire Name (EnqueueDetail). A
	// job not inserted (its unique key held, or its holder rewritten) is
	// not recorded as enqueued. Empty, as for every enqueue of the
	// application, records nothing: an application's enqueue is no
	// Operator Action.
	Actor Actor
}

// ClaimParams are the params of Worker.JobClaim.
type ClaimParams struct {
	Worker job.WorkerID
	// Queues in claim order; see JobClaim.
	Queues []string
	// Limit is the most jobs to lease; at least 1.
	Limit int
	// LeaseDuration is the Lease length from the store's now; positive.
	LeaseDuration time.Duration
	// Reopen, if not nil, receives the claim's word on its Rate Limits: how
	// long from the store's now until the earliest window ends of a rated
	// Queue that withheld a due job from this claim, or zero if no Rate
	// Limit withheld one. The store writes it only on success.
	Reopen *time.Duration
	// Skip are Wire Names the claim leaves alone: no job of one of them is
	// leased, whatever its Queue, as if it were not due (core.FleetSkip
	// says which; see Fleet). Empty skips nothing: the claim is exactly
	// the claim without a fleet registry.
	Skip []string
}

// RenewParams are the params of Worker.LeaseRenew.
type RenewParams struct {
	Worker        job.WorkerID
	Leases        []job.Lease
	LeaseDuration time.Duration
	// Progress is what handlers reported since the last renewal, at most
	// one per Lease, each naming one of Leases (see ProgressReport).
	Progress []ProgressReport
	// Cursors are the Cursors handlers saved since the last renewal, at
	// most one per Lease, each naming one of Leases (see CursorSave).
	Cursors []CursorSave
}

// RenewStatus is a store's answer about one Lease in a renewal.
type RenewStatus uint8

const (
	// RenewRenewed: the Lease is extended.
	RenewRenewed RenewStatus = iota + 1
	// RenewLost: the job is no longer Running under this worker and
	// Attempt; the worker must abandon it.
	RenewLost
	// RenewCancelRequested: the Lease is extended and an operator asked the
	// job to stop; the worker must signal its handler.
	RenewCancelRequested
)

// String names the status.
func (s RenewStatus) String() string {
	switch s {
	case RenewRenewed:
		return "renewed"
	case RenewLost:
		return "lost"
	case RenewCancelRequested:
		return "cancel_requested"
	}
	return "renew_status(?)"
}

// RenewResult answers one Lease of a renewal.
type RenewResult struct {
	Lease  job.Lease
	Status RenewStatus
}

// Outcome is one Attempt's outcome to report: the Core's decision plus the
// opaque data the Shell kept beside it.
type Outcome struct {
	core.Outcome
	// FailureDetail is the bounded diagnostic text of a failed Attempt,
	// recorded on its Transition Log entry; empty when there is none.
	FailureDetail string
	// Output is the Job Output of a succeeded Attempt; nil when none.
	Output []byte
	// TagDelta is merged into the job's Tags when the outcome applies.
	TagDelta []job.Tag
	// Cursor, if not nil, is a Cursor the Attempt saved after its last
	// renewal: stored as the job's Cursor when the outcome applies, under
	// the outcome's fence, whatever the outcome. At most MaxCursorBytes.
	Cursor []byte
}

// ReportParams are the params of Worker.OutcomeReport.
type ReportParams struct {
	Worker   job.WorkerID
	Outcomes []Outcome
}

// ReportResult answers one outcome of a report.
type ReportResult struct {
	Lease job.Lease
	// Applied is false for a stale outcome, which mutated nothing.
	Applied bool
}

// ExpireParams are the params of Worker.LeaseExpire.
type ExpireParams struct {
	// Queues to sweep; empty means none (a sweep is always scoped).
	Queues []string
	// Limit bounds how many jobs one call expires; 0 means no bound.
	Limit int
}

// ExpireResult reports a lease-expiry sweep.
type ExpireResult struct {
	// Expired lists the Leases ended, in id order.
	Expired []job.Lease
}

// RelinquishParams are the params of Worker.LeaseRelinquish.
type RelinquishParams struct {
	Worker job.WorkerID
	Leases []job.Lease
}

// RelinquishResult reports a Relinquish.
type RelinquishResult struct {
	// Relinquished lists the Leases handed back; stale ones are absent.
	Relinquished []job.Lease
}

// QueueParams names one Queue and who acts on it.
type QueueParams struct {
	Queue string
	// Actor is recorded in the audit trail; empty means ActorSystem.
	Actor Actor
}

// QueueSetLimitParams are the params of Queues.QueueSetLimit.
type QueueSetLimitParams struct {
	Queue string
	// Limit is the Concurrency Limit; 0 removes it.
	Limit int
	// Actor is recorded in the audit trail; empty means ActorSystem.
	Actor Actor
}

// QueueInfo describes one Queue.
type QueueInfo struct {
	Name   string
	Paused bool
	// Limit is the Concurrency Limit; 0 when there is none.
	Limit int
	// Running is the number of Running jobs (the slots in use).
	Running int
	// Rate is the Rate Limit; the zero QueueRate when there is none.
	Rate QueueRate
	// RateStarted is how many jobs started in the Rate's current window
	// (the one holding the store's now); 0 without a Rate.
	RateStarted int
	// Keys is the Queue's KeyPolicy (Key Limit, Key Rate, Fair Claim); the
	// zero KeyPolicy when none is set.
	Keys KeyPolicy
}

// JobListParams filter and page Monitor.JobList.
type JobListParams struct {
	JobFilter
	// BeforeID, if non-zero, keeps jobs with a smaller id (the keyset cursor:
	// pass the last id of the previous page).
	BeforeID job.ID
	// Limit is the page size; 0 means 100.
	Limit int
}

// CountParams filter Monitor.JobCountByState.
type CountParams struct {
	// Queue, if set, counts only that Queue.
	Queue string
}

// HintSource is implemented by stores that can announce Wake-Up Hints. A hint
// only cuts latency: subscribers must behave the same, one poll interval
// slower, if every hint is dropped, duplicated or delayed.
type HintSource interface {
	// SubscribeHints calls fn with a Queue name after jobs due now become
	// claimable in it. fn must not block. The returned func unsubscribes.
	SubscribeHints(fn func(queue string)) (unsubscribe func())
}
