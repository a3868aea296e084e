package backwave

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
)

// Observer is a set of optional callbacks BackWave calls, in process, as this
// node enqueues jobs, runs Attempts and calls its store: the feed for
// metrics (the otel package builds one). Set the callbacks you need; a nil
// callback costs nothing, and a Config without Observers reads no clock for
// them.
//
// An Observer is not the glossary's Transition Observer. That one is driven
// by the stored Transition Log, at least once, from any node; an Observer is
// told what this process does, as it happens, at most once, and forgets it:
// nothing it misses (a crash, a callback still running at exit) is told
// again. It can change nothing: every callback runs after the fact.
//
// Callbacks run on BackWave's own goroutines — AttemptStarted and
// AttemptFinished on the Attempt's handler goroutine, JobsEnqueued on the
// enqueuing goroutine, the rest on a Pump's loop — so they must be safe for
// concurrent use and return quickly: a slow callback on the loop delays
// claims, renewals and reports. A callback that panics is recovered and
// logged (Config.Logger, "observer callback panicked"), and the work it
// observed goes on as if it had returned.
type Observer struct {
	// JobsEnqueued is called after an enqueue call stored its jobs: each
	// Enqueue, EnqueueMany, EnqueueUnique and EnqueueManyUnique call, and
	// each EnqueueTx and EnqueueManyTx call (whose jobs exist only once the
	// caller's transaction commits). A call that failed stored nothing and
	// is not reported.
	JobsEnqueued func(ctx context.Context, e EnqueueEvent)
	// AttemptStarted is called as a handler is about to run an Attempt.
	AttemptStarted func(ctx context.Context, e AttemptEvent)
	// AttemptFinished is called when the handler of an Attempt returned or
	// panicked, with its Result and Duration. An Attempt abandoned while it
	// ran (its Lease lost, or the drain over) is reported too; its result
	// is then dropped.
	AttemptFinished func(ctx context.Context, e AttemptEvent)
	// RetryScheduled is called when the store applied an outcome that
	// schedules another Attempt (the job is Scheduled again, Retry Cause
	// handler failed).
	RetryScheduled func(ctx context.Context, e OutcomeEvent)
	// DeadLettered is called when the store applied an outcome that
	// dead-letters the job.
	DeadLettered func(ctx context.Context, e OutcomeEvent)
	// Quarantined is called when the store applied an outcome that
	// quarantines the job (no handler for its Wire Name, or a payload that
	// does not decode).
	Quarantined func(ctx context.Context, e OutcomeEvent)
	// LeaseLost is called when a renewal found the Lease of a running
	// Attempt lost: another node may own the job now, and the handler's
	// context is cancelled with ErrLeaseLost.
	LeaseLost func(ctx context.Context, e LeaseEvent)
	// Relinquished is called for each Lease the store took back when a
	// Pump stopped with Attempts still running (see Config.DrainTimeout).
	Relinquished func(ctx context.Context, e LeaseEvent)
	// StoreCall is called after each store call a Pump made: claim, renew,
	// report, lease expiry, relinquish, schedule load and mint, retention
	// purge.
	StoreCall func(ctx context.Context, e StoreCallEvent)
}

// EnqueueEvent describes one enqueue call that stored jobs.
type EnqueueEvent struct {
	// Jobs are the call's jobs, in input order.
	Jobs []EnqueuedJob
	// InTx is set for EnqueueTx and EnqueueManyTx: the jobs were inserted
	// in the caller's transaction, which may still roll back.
	InTx bool
}

// EnqueuedJob is one job of an EnqueueEvent.
type EnqueuedJob struct {
	ID       JobID
	Queue    string
	WireName string
	// Inserted is false for a job not stored because its unique key is
	// held (WithUnique); ID is then the id of the job holding the key.
	Inserted bool
}

// AttemptResult says how an Attempt's handler returned.
type AttemptResult string

// The results of an Attempt.
const (
	// AttemptSucceeded: the handler returned nil.
	AttemptSucceeded AttemptResult = "succeeded"
	// AttemptFailed: the handler returned an error or panicked; the retry
	// policy decides what follows.
	AttemptFailed AttemptResult = "failed"
	// AttemptFailedPermanently: the handler returned an error marked with
	// FailPermanently; the job dead-letters.
	AttemptFailedPermanently AttemptResult = "failed_permanently"
	// AttemptUnroutable: no handler is registered for the Wire Name; the
	// job is Quarantined with Terminal Cause no handler.
	AttemptUnroutable AttemptResult = "unroutable"
	// AttemptSnoozed: the handler returned Snooze; below the snooze cap the
	// job is due again after the delay without the Attempt being charged,
	// at the cap it is charged like a failure.
	AttemptSnoozed AttemptResult = "snoozed"
	// AttemptUndecodable: the payload does not decode into the handler's
	// arguments, or cannot be decrypted; the job is Quarantined with
	// Terminal Cause undecodable payload.
	AttemptUndecodable AttemptResult = "undecodable"
)

func attemptResult(r core.Result) AttemptResult {
	switch r {
	case core.ResultSucceeded:
		return AttemptSucceeded
	case core.ResultFailedPermanently:
		return AttemptFailedPermanently
	case core.ResultUnroutable:
		return AttemptUnroutable
	case core.ResultSnoozed:
		return AttemptSnoozed
	case core.ResultUndecodable:
		return AttemptUndecodable
	default:
		return AttemptFailed
	}
}

// AttemptEvent describes one Attempt on this node.
type AttemptEvent struct {
	AttemptInfo
	// Group is the Worker Group and Worker the lease-holder identity of the
	// Pump running the Attempt.
	Group  string
	Worker string
	// Result and Duration are set for AttemptFinished only: how the
	// handler returned and how long it ran, on the host's clock.
	Result   AttemptResult
	Duration time.Duration
}

// OutcomeEvent describes one outcome the store applied under the (worker,
// Attempt) fence.
type OutcomeEvent struct {
	ID       JobID
	Attempt  Attempt
	Queue    string
	WireName string
	Group    string
	Worker   string
	// RetryDelay is, for RetryScheduled, the delay before the next Attempt
	// is due.
	RetryDelay time.Duration
}

// LeaseEvent describes one Lease lost or relinquished. Queue and WireName
// are empty when the Pump no longer knew them.
type LeaseEvent struct {
	ID       JobID
	Attempt  Attempt
	Queue    string
	WireName string
	Group    string
	Worker   string
}

// StoreCallEvent describes one store call of a Pump.
type StoreCallEvent struct {
	// Operation names the call: "claim", "renew", "report", "expire",
	// "relinquish", "load_schedules", "mint" or "purge".
	Operation string
	Group     string
	Worker    string
	// Duration is how long the call took, on the host's clock.
	Duration time.Duration
	// Err is the store's error; nil when the call succeeded.
	Err error
}

// observers fans the events of one Pump (or of the Client's enqueue calls)
// out to every Observer, in order, recovering each callback's panic. It is
// the shell.Observer of a Pump.
type observers struct {
	list   []Observer
	log    *slog.Logger
	group  string
	worker string
}

// newObservers returns the fan-out for list, or nil when no Observer sets a
// callback, so an idle configuration costs nothing.
func newObservers(list []Observer, log *slog.Logger) *observers {
	if len(list) == 0 {
		return nil
	}
	return &observers{list: list, log: log}
}

// forPump returns a copy of o naming one Pump, or nil for a nil o.
func (o *observers) forPump(group string, worker job.WorkerID) *observers {
	if o == nil {
		return nil
	}
	return &observers{list: o.list, log: o.log, group: group, worker: string(worker)}
}

// guard runs one callback, recovering and logging its panic.
func (o *observers) guard(ctx context.Context, name string, f func()) {
	defer func() {
		if v := recover(); v != nil {
			o.log.ErrorContext(ctx, "observer callback panicked", "callback", name, "worker", o.worker,
				"panic", v, "stack", string(debug.Stack()))
		}
	}()
	f()
}

func (o *observers) enqueued(ctx context.Context, e EnqueueEvent) {
	for i := range o.list {
		if f := o.list[i].JobsEnqueued; f != nil {
			o.guard(ctx, "JobsEnqueued", func() { f(ctx, e) })
		}
	}
}

func (o *observers) attemptEvent(j job.Job) AttemptEvent {
	return AttemptEvent{AttemptInfo: infoOf(j), Group: o.group, Worker: o.worker}
}

// AttemptStarted implements shell.Observer.
func (o *observers) AttemptStarted(ctx context.Context, j job.Job) {
	e := o.attemptEvent(j)
	for i := range o.list {
		if f := o.list[i].AttemptStarted; f != nil {
			o.guard(ctx, "AttemptStarted", func() { f(ctx, e) })
		}
	}
}

// AttemptFinished implements shell.Observer.
func (o *observers) AttemptFinished(ctx context.Context, j job.Job, r shell.Result, took time.Duration) {
	e := o.attemptEvent(j)
	e.Result, e.Duration = attemptResult(r.Result), took
	for i := range o.list {
		if f := o.list[i].AttemptFinished; f != nil {
			o.guard(ctx, "AttemptFinished", func() { f(ctx, e) })
		}
	}
}

// OutcomeApplied implements shell.Observer.
func (o *observers) OutcomeApplied(ctx context.Context, out core.Outcome, queue, wireName string) {
	var pick func(Observer) func(context.Context, OutcomeEvent)
	var name string
	switch out.State {
	case job.StateScheduled:
		pick, name = func(x Observer) func(context.Context, OutcomeEvent) { return x.RetryScheduled }, "RetryScheduled"
	case job.StateDeadLettered:
		pick, name = func(x Observer) func(context.Context, OutcomeEvent) { return x.DeadLettered }, "DeadLettered"
	case job.StateQuarantined:
		pick, name = func(x Observer) func(context.Context, OutcomeEvent) { return x.Quarantined }, "Quarantined"
	default:
		return
	}
	e := OutcomeEvent{
		ID: out.Lease.ID, Attempt: out.Lease.Attempt, Queue: queue, WireName: wireName,
		Group: o.group, Worker: o.worker, RetryDelay: out.RetryDelay,
	}
	for i := range o.list {
		if f := pick(o.list[i]); f != nil {
			o.guard(ctx, name, func() { f(ctx, e) })
		}
	}
}

func (o *observers) leaseEvent(l job.Lease, queue, wireName string) LeaseEvent {
	return LeaseEvent{ID: l.ID, Attempt: l.Attempt, Queue: queue, WireName: wireName, Group: o.group, Worker: o.worker}
}

// LeaseLost implements shell.Observer.
func (o *observers) LeaseLost(ctx context.Context, l job.Lease, queue, wireName string) {
	e := o.leaseEvent(l, queue, wireName)
	for i := range o.list {
		if f := o.list[i].LeaseLost; f != nil {
			o.guard(ctx, "LeaseLost", func() { f(ctx, e) })
		}
	}
}

// Relinquished implements shell.Observer.
func (o *observers) Relinquished(ctx context.Context, l job.Lease, queue, wireName string) {
	e := o.leaseEvent(l, queue, wireName)
	for i := range o.list {
		if f := o.list[i].Relinquished; f != nil {
			o.guard(ctx, "Relinquished", func() { f(ctx, e) })
		}
	}
}

// StoreCall implements shell.Observer.
func (o *observers) StoreCall(ctx context.Context, op string, took time.Duration, err error) {
	e := StoreCallEvent{Operation: op, Group: o.group, Worker: o.worker, Duration: took, Err: err}
	for i := range o.list {
		if f := o.list[i].StoreCall; f != nil {
			o.guard(ctx, "StoreCall", func() { f(ctx, e) })
		}
	}
}

var _ shell.Observer = (*observers)(nil)
