package backwave

import (
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
)

var (
	// ErrInvalidConfig is wrapped by every configuration error NewClient,
	// AddHandler and AddHandlerFunc return, whichever layer found it: it is
	// the same value as node.ErrInvalidConfig and shell.ErrInvalidConfig.
	ErrInvalidConfig = node.ErrInvalidConfig
	// ErrInvalidJob is wrapped by Enqueue and EnqueueMany when the job
	// cannot be stored as given (no Wire Name, args that do not encode,
	// an invalid Queue, Tag or option). Nothing is inserted. Its text
	// carries no package prefix because it is always wrapped by one
	// ("backwave: enqueue: invalid job: …").
	ErrInvalidJob = errors.New("invalid job")
)

// Errors of the Monitor reads and Operator Actions (Admin), of Client.JobGet
// and of the Recurring Schedule actions. Each is the store's own sentinel,
// so errors.Is matches whatever adapter returned it.
var (
	// ErrNotFound: no job, Queue or schedule with that identity.
	ErrNotFound = store.ErrNotFound
	// ErrIllegalTransition: an Operator Action the job's current state does
	// not allow, such as requeuing a Succeeded job or rescheduling a
	// Running one. Nothing changed.
	ErrIllegalTransition = store.ErrIllegalTransition
	// ErrOverlap: a schedule with No-Overlap refused a trigger because the
	// job it made last is still live.
	ErrOverlap = store.ErrOverlap
	// ErrHolderNotPending is the answer to an enqueue in Replace or
	// Debounce mode (UniqueScope.Replace, UniqueScope.Debounce) whose
	// unique key is held by a job that is not Scheduled: Running, Awaiting
	// Parent or ended. Nothing of the enqueue is stored and the holder is
	// untouched.
	ErrHolderNotPending = store.ErrHolderNotPending
	// ErrInvalidParams: the arguments break a documented precondition (a
	// negative page limit, a zero due time, an invalid Actor or filter Tag).
	// Nothing changed.
	ErrInvalidParams = store.ErrInvalidParams
	// ErrQueueNotEmpty: Admin.RemoveQueue refused a Queue that still holds
	// jobs; the error says how many and what to do. Nothing changed.
	ErrQueueNotEmpty = store.ErrQueueNotEmpty
	// ErrStillNeeded: Admin.Delete refused a terminal job that retention
	// keeps too — a stored job depends on it, its Workflow has a live
	// member, or a Transition Observer has not yet read its Transition
	// Log; the error says which. Nothing changed.
	ErrStillNeeded = store.ErrStillNeeded
	// ErrSchemaTooOld: the store's schema lacks what the call needs (the
	// Concurrency Key column before its migration ran). Nothing changed.
	ErrSchemaTooOld = store.ErrSchemaTooOld
	// ErrInvalidTag: a Tag that cannot be stored (see Tag.Validate).
	ErrInvalidTag = job.ErrInvalidTag
)

// Causes of a handler's context cancellation; read them with
// context.Cause(ctx).
var (
	// ErrLeaseLost: this node lost the job's Lease; another node may already
	// be running it. The Attempt's result is discarded.
	ErrLeaseLost = shell.ErrLeaseLost
	// ErrShutdown: the Client stopped and its drain period ran out. The
	// job's Lease is relinquished and its result discarded.
	ErrShutdown = shell.ErrShutdown
	// ErrCancelRequested: an operator asked the job to stop. Returning an
	// error after it ends the job Cancelled.
	ErrCancelRequested = shell.ErrCancelRequested
	// ErrAttemptTimeout: the Attempt ran past its attempt timeout
	// (WithAttemptTimeout, Config.AttemptTimeout). Returning an error after
	// it fails the Attempt with Failure Detail naming the timeout, and the
	// retry policy applies as to any failure.
	ErrAttemptTimeout = shell.ErrAttemptTimeout
)

// permanentError marks a handler error that must not be retried.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// FailPermanently wraps err so that returning it from a handler dead-letters
// the job at once instead of scheduling another Attempt. FailPermanently(nil)
// returns nil.
func FailPermanently(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, came from
// FailPermanently.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// snoozeError is a handler's request to run the job again after a delay.
type snoozeError struct{ delay time.Duration }

func (e *snoozeError) Error() string { return fmt.Sprintf("backwave: snoozed for %v", e.delay) }

// Snooze returns the error a handler returns to say "not yet, try again in
// d": the job goes back to Scheduled, due d after the store applies the
// outcome, and the Attempt it used is not charged against its attempt
// budget (MaxAttempts). Zero means due again at once. A job gets
// Config.SnoozeCap free snoozes over its whole existence
// (WithSnoozeCap per Wire Name); a snooze past the cap is charged like a
// failure, so a handler that snoozes forever still dead-letters. A negative
// d, or one above MaxSnoozeDelay, fails the Attempt with Failure Detail
// naming the problem. A handler may wrap the error (fmt.Errorf("%w")); an
// error marked with FailPermanently dead-letters even if it wraps a Snooze.
//
// The snooze is recorded in the job's Transition Log (via snooze) with the
// error's text as its detail; JobInfo.Snoozes counts them.
func Snooze(d time.Duration) error { return &snoozeError{delay: d} }

// SnoozeDelay reports whether err, or an error it wraps, came from Snooze,
// and the delay it asked for.
func SnoozeDelay(err error) (time.Duration, bool) {
	var s *snoozeError
	if !errors.As(err, &s) {
		return 0, false
	}
	return s.delay, true
}

func isSnooze(err error) bool {
	_, ok := SnoozeDelay(err)
	return ok
}

// MaxSnoozeDelay is the longest delay a Snooze may ask for.
const MaxSnoozeDelay = core.MaxSnoozeDelay

// actionErr wraps a store's error for an Admin read or action; what names
// the action and its subject ("requeue job 42"). A not-found is said once:
// the store's message would name the subject again, so only the sentinel
// is kept ("backwave: requeue job 42: store: not found").
func actionErr(what string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("backwave: %s: %w", what, store.ErrNotFound)
	}
	return fmt.Errorf("backwave: %s: %w", what, err)
}
