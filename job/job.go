// Package job holds the value types every part of BackWave shares: job
// identity, State, Attempt, Retry Cause, Tags, and the stored job row.
//
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
package job

import (
	"fmt"
	"strconv"
	"time"
)

// ID identifies one stored job. The store assigns it at insert; it is never
// reused within one store.
type ID int64

// String renders the id in decimal.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// Attempt numbers one execution try of a job. The store charges it at claim
// (a job's first claim runs Attempt 1) and never reuses a number: a crash
// after the charge leaves a gap, never a repeat. A job that was never claimed
// has Attempt 0.
type Attempt int32

// WorkerID names the lease holder that claimed a job: one Pump of one Worker
// Group in one process. Together with the Attempt it fences every outcome.
type WorkerID string

// Lease is a worker's time-bounded, heartbeat-renewed claim on one Attempt of
// a job. It is identified by the job and the Attempt the claim charged.
type Lease struct {
	ID      ID
	Attempt Attempt
}

// String renders the lease as "id@attempt".
func (l Lease) String() string { return fmt.Sprintf("%d@%d", l.ID, l.Attempt) }

// RetryCause says why a job last went back to Scheduled because an Attempt
// went wrong. It is sticky: a claim, a Relinquish, a cancel and a terminal
// outcome leave it as it is; only an operator requeue clears it. A new job has
// none.
type RetryCause uint8

const (
	// RetryCauseNone means no Attempt of this job has gone wrong (or an
	// operator requeue cleared the record).
	RetryCauseNone RetryCause = iota
	// RetryCauseHandlerFailed means the handler failed and the retry policy
	// scheduled another Attempt.
	RetryCauseHandlerFailed
	// RetryCauseLeaseExpired means the Lease lapsed before the worker reported
	// an outcome.
	RetryCauseLeaseExpired
)

var retryCauseNames = [...]string{
	RetryCauseNone:          "",
	RetryCauseHandlerFailed: "handler_failed",
	RetryCauseLeaseExpired:  "lease_expired",
}

// String returns the stored name of the cause ("" for none).
func (c RetryCause) String() string {
	if int(c) < len(retryCauseNames) {
		return retryCauseNames[c]
	}
	return "retry_cause(" + strconv.Itoa(int(c)) + ")"
}

// ParseRetryCause is the inverse of RetryCause.String.
func ParseRetryCause(s string) (RetryCause, error) {
	for c, name := range retryCauseNames {
		if name == s {
			return RetryCause(c), nil
		}
	}
	return RetryCauseNone, fmt.Errorf("job: unknown retry cause %q", s)
}

// CancelCause records why a job ended Cancelled.
type CancelCause uint8

const (
	// CancelCauseNone is the cause of a job that is not Cancelled.
	CancelCauseNone CancelCause = iota
	// CancelCauseOperator means an Operator Action cancelled the job.
	CancelCauseOperator
	// CancelCauseParentFailure means an on-success Dependency parent ended
	// Dead-Lettered or Cancelled.
	CancelCauseParentFailure
)

var cancelCauseNames = [...]string{
	CancelCauseNone:          "",
	CancelCauseOperator:      "operator",
	CancelCauseParentFailure: "parent_failure",
}

// String returns the stored name of the cause ("" for none).
func (c CancelCause) String() string {
	if int(c) < len(cancelCauseNames) {
		return cancelCauseNames[c]
	}
	return "cancel_cause(" + strconv.Itoa(int(c)) + ")"
}

// ParseCancelCause is the inverse of CancelCause.String.
func ParseCancelCause(s string) (CancelCause, error) {
	for c, name := range cancelCauseNames {
		if name == s {
			return CancelCause(c), nil
		}
	}
	return CancelCauseNone, fmt.Errorf("job: unknown cancel cause %q", s)
}

// Job is a stored job row as a store returns it from a claim or a read.
type Job struct {
	ID       ID
	WireName string
	Queue    string
	// Payload is the opaque, encoded job arguments, written once at insert.
	Payload []byte
	State   State
	// Attempt is the last Attempt charged (0 if never claimed).
	Attempt Attempt
	// MaxAttempts is the attempt budget of one life of the job: how many
	// tries it gets before it dead-letters.
	MaxAttempts int
	// AttemptBase is the Attempt the job stood at when an operator last
	// requeued it (0 if never), plus one for each snooze since: the
	// current life's budget counts the charged Attempts above it. Attempt
	// numbers are never reused, so a requeue moves the base instead of
	// resetting the counter, and a snooze moves it up by one so the
	// Attempt it used is not charged.
	AttemptBase Attempt
	// Snoozes is how many snoozes the store applied to the job over its
	// whole existence (an operator requeue does not reset it); the Driver
	// holds it to the Wire Name's cap.
	Snoozes int
	// ScheduledAt is the due time: a Scheduled job is claimable once the
	// store's clock reaches it.
	ScheduledAt time.Time
	CreatedAt   time.Time
	// FinalizedAt is when the job reached a terminal state (zero if live).
	FinalizedAt time.Time
	RetryCause  RetryCause
	CancelCause CancelCause
	// TerminalCause is why a Dead-Lettered or Quarantined job ended so
	// (TerminalCause.Fits); none in every other state.
	TerminalCause TerminalCause
	// Worker and LeaseExpiresAt describe the live Lease of a Running job.
	Worker         WorkerID
	LeaseExpiresAt time.Time
	// CancelRequested is set when an operator asked a Running job to stop;
	// the next lease renewal tells its worker.
	CancelRequested bool
	Tags            []Tag
	// ConcurrencyKey is the job's Concurrency Key, chosen at enqueue and
	// never changed; "" is none. Unlike a Tag it is Core data: the claim
	// reads it under its Queue's key policy (Key Limit, Key Rate, Fair
	// Claim).
	ConcurrencyKey string
	// TraceContext is the trace context the job was enqueued with: text
	// propagation fields (such as W3C traceparent and tracestate) written at
	// insert and never changed, in a field of its own rather than a Tag, so
	// an Attempt's trace can name the enqueue as its parent. Nil when none
	// was stored. Nothing below the determinism boundary reads it.
	TraceContext map[string]string
	// Progress is the last progress a handler of the job reported, nil if
	// none: observational, like a Tag, and never read by the Core.
	Progress *Progress
	// Cursor is the Cursor an Attempt of the job last saved, nil if none:
	// one opaque value its handler owns, read by the next Attempt to resume
	// from. The Core never reads it.
	Cursor *Cursor
}

// Cursor is the one value a resumable job's handler saves as it goes, so
// that a later Attempt resumes where an earlier one stopped. It is a single
// value the handler owns and overwrites, never a log of steps or a record of
// results to replay.
type Cursor struct {
	// Attempt is the Attempt that saved it.
	Attempt Attempt
	// Value is the saved value, opaque to the store.
	Value []byte
	// At is when the store recorded it, on its clock.
	At time.Time
}

// Progress is what a handler last reported of how far its Attempt got.
type Progress struct {
	// Attempt is the Attempt that reported it.
	Attempt Attempt
	// Fraction is how much of the work is done, from 0 to 1.
	Fraction float64
	// Note is a short text about it; may be empty.
	Note string
	// At is when the store recorded it, on its clock.
	At time.Time
}

// Lease returns the (job, Attempt) pair that fences this job's current
// Attempt.
func (j *Job) Lease() Lease { return Lease{ID: j.ID, Attempt: j.Attempt} }

// Ceiling returns the Attempt number at which the job's current life is
// spent: AttemptBase + MaxAttempts. An Attempt at or past it that fails
// dead-letters the job.
func (j *Job) Ceiling() int { return int(j.AttemptBase) + j.MaxAttempts }

// Retrying reports whether the job is in the Retrying view: Scheduled and
// carrying a Retry Cause.
func (j *Job) Retrying() bool {
	return j.State == StateScheduled && j.RetryCause != RetryCauseNone
}
