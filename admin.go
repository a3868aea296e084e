package backwave

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Actor is the recorded identity behind an Operator Action (store.Actor).
type Actor = store.Actor

// ErrNoActor is returned by Admin when no Actor was named: every Operator
// Action records who asked for it.
var ErrNoActor = errors.New("backwave: an operator action needs an actor")

// Admin performs audited Operator Actions and Monitor reads on behalf of
// one Actor: each write records the Actor in the store's audit trail. An
// action on the wrong state fails with an error wrapping
// store.ErrIllegalTransition (e.g. rescheduling a Running job); an unknown
// job with store.ErrNotFound. Get one from Client.Admin.
type Admin struct {
	store store.Store
	actor Actor
}

// Admin returns a handle that acts as actor, which must not be empty.
func (c *Client) Admin(actor Actor) (*Admin, error) {
	if actor == "" {
		return nil, ErrNoActor
	}
	if err := actor.Validate(); err != nil {
		return nil, fmt.Errorf("backwave: admin: %w", err)
	}
	return &Admin{store: c.store, actor: actor}, nil
}

// Requeue moves a Dead-Lettered or Quarantined job back to Scheduled, due
// now: its Retry Cause is cleared and it gets a fresh budget of MaxAttempts
// tries above the Attempt it had reached (Attempt numbers are never
// reused). It returns the job as requeued.
func (a *Admin) Requeue(ctx context.Context, id JobID) (job.Job, error) {
	j, err := a.store.JobRequeue(ctx, store.JobRequeueParams{ID: id, Actor: a.actor})
	if err != nil {
		return job.Job{}, fmt.Errorf("backwave: requeue job %d: %w", id, err)
	}
	return j, nil
}

// Cancel cancels a job: a waiting one at once; a Running one cooperatively —
// its handler's context is cancelled at the next heartbeat, and however
// that Attempt ends the job ends Cancelled. It returns the job as the
// action left it (Cancelled, or Running with CancelRequested).
func (a *Admin) Cancel(ctx context.Context, id JobID) (job.Job, error) {
	j, err := a.store.JobCancel(ctx, store.JobCancelParams{ID: id, Actor: a.actor})
	if err != nil {
		return job.Job{}, fmt.Errorf("backwave: cancel job %d: %w", id, err)
	}
	return j, nil
}

// Reschedule moves the due time of a waiting (Scheduled or Awaiting-Parent)
// job to at. It writes an audit record and no Transition Log entry. To join
// your own transaction, use the adapter's JobRescheduleTx.
func (a *Admin) Reschedule(ctx context.Context, id JobID, at time.Time) (job.Job, error) {
	j, err := a.store.JobReschedule(ctx, store.JobRescheduleParams{ID: id, Actor: a.actor, ScheduledAt: at})
	if err != nil {
		return job.Job{}, fmt.Errorf("backwave: reschedule job %d: %w", id, err)
	}
	return j, nil
}

// PauseQueue stops claims from queue; running jobs are unaffected.
func (a *Admin) PauseQueue(ctx context.Context, queue string) error {
	if err := a.store.QueuePause(ctx, store.QueueParams{Queue: queue, Actor: a.actor}); err != nil {
		return fmt.Errorf("backwave: pause queue %q: %w", queue, err)
	}
	return nil
}

// ResumeQueue lets claims from queue start again.
func (a *Admin) ResumeQueue(ctx context.Context, queue string) error {
	if err := a.store.QueueResume(ctx, store.QueueParams{Queue: queue, Actor: a.actor}); err != nil {
		return fmt.Errorf("backwave: resume queue %q: %w", queue, err)
	}
	return nil
}

// SetQueueLimit sets queue's cluster-wide Concurrency Limit; 0 removes it.
func (a *Admin) SetQueueLimit(ctx context.Context, queue string, limit int) error {
	if err := a.store.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: queue, Limit: limit, Actor: a.actor}); err != nil {
		return fmt.Errorf("backwave: set the limit of queue %q: %w", queue, err)
	}
	return nil
}

// JobDetail is one job with its Transition Log, as the Monitor shows it.
type JobDetail struct {
	Job         job.Job
	Transitions []store.Transition
	// Output is the Job Output, nil if none.
	Output []byte
}

// Job returns one job's detail: the row, its Transition Log and its Job
// Output.
func (a *Admin) Job(ctx context.Context, id JobID) (JobDetail, error) {
	var d JobDetail
	var err error
	if d.Job, err = a.store.JobGet(ctx, id); err != nil {
		return d, fmt.Errorf("backwave: job %d: %w", id, err)
	}
	if d.Transitions, err = a.store.JobTransitions(ctx, id); err != nil {
		return d, fmt.Errorf("backwave: job %d: transition log: %w", id, err)
	}
	if d.Output, err = a.store.JobOutput(ctx, id); err != nil {
		return d, fmt.Errorf("backwave: job %d: output: %w", id, err)
	}
	return d, nil
}

// Jobs lists jobs matching p, newest first, one keyset page at a time.
func (a *Admin) Jobs(ctx context.Context, p store.JobListParams) ([]job.Job, error) {
	jobs, err := a.store.JobList(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("backwave: list jobs: %w", err)
	}
	return jobs, nil
}

// Retrying lists the Retrying view: Scheduled jobs carrying a Retry Cause,
// newest first (glossary, Retrying).
func (a *Admin) Retrying(ctx context.Context, queue string, before JobID, limit int) ([]job.Job, error) {
	return a.Jobs(ctx, store.JobListParams{JobFilter: store.JobFilter{Retrying: true, Queue: queue}, BeforeID: before, Limit: limit})
}

// Audit lists the audit trail, newest first.
func (a *Admin) Audit(ctx context.Context, p store.AuditListParams) ([]store.AuditEntry, error) {
	out, err := a.store.AuditList(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("backwave: audit trail: %w", err)
	}
	return out, nil
}
