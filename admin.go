package backwave

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// ErrNoActor is returned by NewAdmin and Client.Admin when no Actor was
// named: every Operator Action records who asked for it.
var ErrNoActor = errors.New("backwave: an operator action needs an actor")

// Admin is the one home of the Monitor reads and the audited Operator
// Actions, on behalf of one Actor: the command-line tool, a dashboard and
// an MCP Server all go through it. Each action is a defined action, never a
// raw row edit, and records the Actor in the store's audit trail with its
// effect. An action the job's current state does not allow fails with an
// error wrapping ErrIllegalTransition (e.g. rescheduling a Running job) and
// changes nothing; an unknown job, Queue or schedule is ErrNotFound. Get one
// from NewAdmin, or from Client.Admin over a Client's store. Its methods
// are safe for concurrent use.
type Admin struct {
	store store.Store
	// monitor serves the Monitor reads: the store, or a replica of it
	// (WithReplica).
	monitor store.Monitor
	actor   Actor
	// queueSetup lets the per-Queue settings actions set up an unknown
	// Queue (WithQueueSetup).
	queueSetup bool
}

// Monitor is the read side of a Store: what a read replica an adapter
// opens (postgres.OpenReplica) serves, for WithReplica. Its methods are the
// Storage Contract's; every Store is one.
type Monitor = store.Monitor

// AdminOption is an option of NewAdmin.
type AdminOption func(*Admin)

// WithReplica sends the Admin's Monitor reads — job lists, counts, Tag
// Facets and suggestions, the audit trail, and the job of Admin.Job — to
// m, a Monitor over a read replica of the Admin's store (for PostgreSQL,
// postgres.OpenReplica, which falls back to the primary when the standby
// is down or lags). Every Operator Action, the rest of Admin.Job (its
// Transition Log, Job Output and Dependencies), and every read an action
// makes of its own effect still go to the store. A replica lags: a job
// enqueued or changed a moment ago may not show yet. nil leaves the reads
// on the store.
func WithReplica(m Monitor) AdminOption {
	return func(a *Admin) {
		if m != nil {
			a.monitor = m
		}
	}
}

// NewAdmin returns an Admin over s that acts as actor. s is a store as an
// adapter opens it (nil is an error wrapping ErrInvalidConfig); the Admin
// does not close it. actor must not be empty (ErrNoActor); an invalid one
// (over 256 bytes, not UTF-8, with control characters) is an error wrapping
// ErrInvalidParams.
func NewAdmin(s Store, actor Actor, opts ...AdminOption) (*Admin, error) {
	switch {
	case s == nil:
		return nil, fmt.Errorf("%w: NewAdmin: no store", ErrInvalidConfig)
	case actor == "":
		return nil, ErrNoActor
	}
	if err := actor.Validate(); err != nil {
		return nil, fmt.Errorf("backwave: admin: %w", err)
	}
	a := &Admin{store: s, monitor: s, actor: actor}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

// Admin returns an Admin over the Client's store that acts as actor, with
// opts; see NewAdmin.
func (c *Client) Admin(actor Actor, opts ...AdminOption) (*Admin, error) {
	return NewAdmin(c.store, actor, opts...)
}

// JobGet reads one stored job, for application code that only reads; an
// unknown id is an error wrapping ErrNotFound. Admin.Job adds the
// Transition Log and Job Output.
func (c *Client) JobGet(ctx context.Context, id JobID) (JobInfo, error) {
	return jobGet(ctx, c.store, id)
}

func jobGet(ctx context.Context, s store.Monitor, id JobID) (JobInfo, error) {
	j, err := s.JobGet(ctx, id)
	if err != nil {
		return JobInfo{}, actionErr(fmt.Sprintf("job %d", id), err)
	}
	return jobInfoOf(j), nil
}

// Actor returns the Actor the Admin records.
func (a *Admin) Actor() Actor { return a.actor }

// Job returns one job's detail: the row, its Transition Log and its Job
// Output. Behind the encrypt wrapper, a payload or Job Output that no
// longer opens (its key purged, the bytes damaged) is returned as stored,
// an envelope, beside the job's state and log: one unreadable value never
// hides the rest of the detail.
func (a *Admin) Job(ctx context.Context, id JobID) (JobDetail, error) {
	var d JobDetail
	var err error
	if d.Job, err = jobGet(ctx, a.monitor, id); err != nil {
		return JobDetail{}, err
	}
	trs, err := a.store.JobTransitions(ctx, id)
	if err != nil {
		return JobDetail{}, fmt.Errorf("backwave: job %d: transition log: %w", id, err)
	}
	d.Transitions = transitionsOf(trs)
	if d.Output, err = a.store.JobOutput(ctx, id); err != nil {
		return JobDetail{}, fmt.Errorf("backwave: job %d: output: %w", id, err)
	}
	if d.Rewrites, err = a.rewrites(ctx, id); err != nil {
		return JobDetail{}, fmt.Errorf("backwave: job %d: rewrites: %w", id, err)
	}
	return d, nil
}

// LastFailure returns the first line of the newest Failure Detail in job
// id's Transition Log, cut to at most maxRunes runes (an ellipsis marks a
// cut), or "" when no Attempt of it failed with one. Failure Detail is
// sensitive: a surface shows it only to a caller holding
// ViewSensitiveData. It reads the job's Transition Log from the store.
func (a *Admin) LastFailure(ctx context.Context, id JobID, maxRunes int) (string, error) {
	trs, err := a.store.JobTransitions(ctx, id)
	if err != nil {
		return "", actionErr(fmt.Sprintf("last failure of job %d", id), err)
	}
	for i := len(trs) - 1; i >= 0; i-- {
		if d := trs[i].FailureDetail; d != "" {
			line, _, _ := strings.Cut(d, "\n")
			if r := []rune(line); maxRunes > 0 && len(r) > maxRunes {
				line = string(r[:maxRunes-1]) + "…"
			}
			return line, nil
		}
	}
	return "", nil
}

// HasFailed reports whether j's state is explained by a failed Attempt, so
// that its last Failure Detail says why it is where it is: a Dead-Lettered
// or Quarantined job, or a retrying one (Scheduled with a Retry Cause).
func (j JobInfo) HasFailed() bool {
	return j.State == StateDeadLettered || j.State == StateQuarantined || j.Retrying()
}

// rewrites reads the audit trail's Replace and Debounce rewrites of job id,
// oldest first (JobDetail.Rewrites).
func (a *Admin) rewrites(ctx context.Context, id JobID) ([]AuditEntry, error) {
	entries, err := a.store.AuditList(ctx, store.AuditListParams{JobID: id, Limit: MaxPageLimit})
	if err != nil {
		return nil, err
	}
	var out []AuditEntry
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.Action == store.AuditUniqueReplace || e.Action == store.AuditUniqueDebounce {
			out = append(out, auditEntryOf(e))
		}
	}
	return out, nil
}

// Jobs lists the jobs p's filter keeps, newest first, one page at a time.
// An invalid filter (a bad Tag, CreatedTo before CreatedFrom) or a negative
// Limit is an error wrapping ErrInvalidParams. A filter naming a Queue or a
// Wire Name the store does not know is an UnknownNameError (wrapping
// ErrNotFound), not an empty page: a Queue is known as Admin.Queue says; a
// Wire Name is known when a stored job carries it or a Recurring Schedule
// mints it, and the error lists those of the schedules and of the newest
// stored jobs.
func (a *Admin) Jobs(ctx context.Context, p JobListParams) (Page[JobInfo], error) {
	page, err := readPage(p.PageParams, "list jobs", func(limit int) ([]job.Job, error) {
		return a.monitor.JobList(ctx, store.JobListParams{JobFilter: p.JobFilter.store(), BeforeID: JobID(p.Before), Limit: limit})
	}, jobInfoOf, func(j *JobInfo) Cursor { return Cursor(j.ID) })
	if err == nil && len(page.Items) == 0 {
		err = a.checkFilter(ctx, p.Queue, p.WireName)
	}
	return page, err
}

// Retrying lists the Retrying view of queue (every Queue if empty):
// Scheduled jobs carrying a Retry Cause, still live but waiting for another
// Attempt because the last one went wrong. Newest first, one page at a time.
// An unknown Queue is refused as by Jobs.
func (a *Admin) Retrying(ctx context.Context, queue string, p PageParams) (Page[JobInfo], error) {
	return a.Jobs(ctx, JobListParams{JobFilter: JobFilter{Retrying: true, Queue: queue}, PageParams: p})
}

// CountByState counts the jobs of queue (every Queue if empty) in each
// state; a state without jobs may be absent. It reads counters the store
// keeps as jobs move, so it is cheap at any table size. An unknown Queue is
// refused as by Jobs.
func (a *Admin) CountByState(ctx context.Context, queue string) (map[JobState]int, error) {
	counts, err := a.monitor.JobCountByState(ctx, store.CountParams{Queue: queue})
	if err != nil {
		return nil, fmt.Errorf("backwave: count jobs by state: %w", err)
	}
	if len(counts) == 0 {
		if err := a.checkFilter(ctx, queue, ""); err != nil {
			return nil, err
		}
	}
	out := make(map[JobState]int, len(counts))
	for s, n := range counts {
		out[JobState(s)] = n
	}
	return out, nil
}

// CountByQueue counts the jobs of every Queue in each state, ordered by
// Queue then state; zero counts are absent.
func (a *Admin) CountByQueue(ctx context.Context) ([]QueueStateCount, error) {
	counts, err := a.monitor.JobCountByQueue(ctx)
	if err != nil {
		return nil, fmt.Errorf("backwave: count jobs by queue: %w", err)
	}
	out := make([]QueueStateCount, len(counts))
	for i, c := range counts {
		out[i] = queueStateCountOf(c)
	}
	return out, nil
}

// Queues returns every known Queue, ordered by name, with whether it is
// paused, its Concurrency Limit, its Running count and its Rate Limit.
func (a *Admin) Queues(ctx context.Context) ([]QueueInfo, error) {
	qs, err := a.store.QueueList(ctx)
	if err != nil {
		return nil, fmt.Errorf("backwave: list queues: %w", err)
	}
	out := make([]QueueInfo, len(qs))
	for i, q := range qs {
		out[i] = queueInfoOf(q)
	}
	return out, nil
}

// TagFacet returns the Tag Facet of the slice of jobs f keeps: the Tags
// they carry with how many jobs carry each, highest count first (ties by
// Tag), capped to the top limit (10 if 0, at most 1,000). It answers "what
// are the dominant buckets in this slice", never "what Tags exist": to
// reach any Tag, use TagSuggest. A filter naming an unknown Queue or Wire
// Name is refused as by Jobs.
func (a *Admin) TagFacet(ctx context.Context, f JobFilter, limit int) ([]TagCount, error) {
	if limit < 0 {
		return nil, fmt.Errorf("backwave: tag facet: %w: limit %d is negative", ErrInvalidParams, limit)
	}
	buckets, err := a.monitor.TagFacet(ctx, store.TagFacetParams{JobFilter: f.store(), Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("backwave: tag facet: %w", err)
	}
	if len(buckets) == 0 {
		if err := a.checkFilter(ctx, f.Queue, f.WireName); err != nil {
			return nil, err
		}
	}
	out := make([]TagCount, len(buckets))
	for i, b := range buckets {
		out[i] = tagCountOf(b)
	}
	return out, nil
}

// TagSuggest completes prefix over every Tag in the store: matched
// case-insensitively against the start of each Tag's display form (a
// Label's value, a Keyed Tag's "key=value"), ordered lexicographically, up
// to limit of them (20 if 0, at most 1,000). Each comes in its stored
// casing, so a JobFilter built from it matches exactly. It never filters
// jobs, and a suggested Tag may have no match under a given filter, but
// some stored job carries it: a Tag whose last job retention purged is no
// longer offered.
func (a *Admin) TagSuggest(ctx context.Context, prefix string, limit int) ([]Tag, error) {
	if limit < 0 {
		return nil, fmt.Errorf("backwave: tag suggest: %w: limit %d is negative", ErrInvalidParams, limit)
	}
	tags, err := a.monitor.TagSuggest(ctx, store.TagSuggestParams{Prefix: prefix, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("backwave: tag suggest %q: %w", prefix, err)
	}
	return tagsOf(tags), nil
}

// Dependencies returns a job's Dependency edges: its mode, its parents
// (with whether its latch has counted each) and its dependents.
func (a *Admin) Dependencies(ctx context.Context, id JobID) (DependencyInfo, error) {
	d, err := a.store.JobDependencies(ctx, id)
	if err != nil {
		return DependencyInfo{}, actionErr(fmt.Sprintf("dependencies of job %d", id), err)
	}
	return dependencyInfoOf(d), nil
}

// Audit lists the audit trail of Operator Actions p keeps, newest first,
// one page at a time.
func (a *Admin) Audit(ctx context.Context, p AuditListParams) (Page[AuditEntry], error) {
	return readPage(p.PageParams, "audit trail", func(limit int) ([]store.AuditEntry, error) {
		return a.monitor.AuditList(ctx, store.AuditListParams{JobID: p.JobID, Queue: p.Queue, BeforeID: int64(p.Before), Limit: limit})
	}, auditEntryOf, func(e *AuditEntry) Cursor { return Cursor(e.ID) })
}

// Requeue moves a Dead-Lettered or Quarantined job back to Scheduled, due
// now: its Retry Cause is cleared and it gets a fresh budget of MaxAttempts
// tries above the Attempt it had reached (Attempt numbers are never
// reused). It returns the job as requeued.
func (a *Admin) Requeue(ctx context.Context, id JobID) (JobInfo, error) {
	j, err := a.store.JobRequeue(ctx, store.JobRequeueParams{ID: id, Actor: store.Actor(a.actor)})
	if err != nil {
		return JobInfo{}, a.jobActionErr(ctx, actionRequeue, id, err)
	}
	return jobInfoOf(j), nil
}

// Cancel cancels a job: a waiting one at once; a Running one cooperatively
// — its handler's context is cancelled at the next heartbeat, and however
// that Attempt ends the job ends Cancelled. It returns the job as the
// action left it: Cancelled, or Running with CancelRequested.
func (a *Admin) Cancel(ctx context.Context, id JobID) (JobInfo, error) {
	j, err := a.store.JobCancel(ctx, store.JobCancelParams{ID: id, Actor: store.Actor(a.actor)})
	if err != nil {
		return JobInfo{}, a.jobActionErr(ctx, actionCancel, id, err)
	}
	return jobInfoOf(j), nil
}

// Delete removes a terminal job (Succeeded, Dead-Lettered, Quarantined or
// Cancelled) before retention would, with everything retention removes
// beside it: payload, Tags, Transition Log, Job Output, its Dependency
// edges and schedule occurrence record. The audit entry it writes (actor,
// AuditDelete, the job's id and Queue, its Wire Name as Detail) outlives
// the job. A live job is refused with an error wrapping
// ErrIllegalTransition. A job retention keeps too
// (a stored job depends on it, its Workflow has a live member, or a
// Transition Observer has not read its Transition Log yet) is refused with
// an error wrapping ErrStillNeeded, so dependents go before their parents.
// It returns the job as it was removed.
func (a *Admin) Delete(ctx context.Context, id JobID) (JobInfo, error) {
	j, err := a.store.JobDelete(ctx, store.JobDeleteParams{ID: id, Actor: store.Actor(a.actor)})
	if err != nil {
		return JobInfo{}, a.jobActionErr(ctx, actionDelete, id, err)
	}
	return jobInfoOf(j), nil
}

// Reschedule moves the due time of a waiting (Scheduled or Awaiting-Parent)
// job to at. The job keeps its id, payload, Attempt and Retry Cause; the
// action writes an audit record and no Transition Log entry, because the
// state does not change. A zero at, or one outside the years store.MinYear
// to store.MaxYear (UTC), is an error wrapping ErrInvalidParams, whatever
// the store.
func (a *Admin) Reschedule(ctx context.Context, id JobID, at time.Time) (JobInfo, error) {
	j, err := a.store.JobReschedule(ctx, store.JobRescheduleParams{ID: id, Actor: store.Actor(a.actor), ScheduledAt: at})
	if err != nil {
		return JobInfo{}, a.jobActionErr(ctx, actionReschedule, id, err)
	}
	return jobInfoOf(j), nil
}

// RescheduleIn is Reschedule to d from now on the store's clock (the clock
// every due comparison reads), so "in an hour" is an hour of the store's
// time, not of this host's: a host whose clock is off by minutes still
// moves the job by exactly d. d must be positive.
func (a *Admin) RescheduleIn(ctx context.Context, id JobID, d time.Duration) (JobInfo, error) {
	j, err := a.store.JobReschedule(ctx, store.JobRescheduleParams{ID: id, Actor: store.Actor(a.actor), After: d})
	if err != nil {
		return JobInfo{}, actionErr(fmt.Sprintf("reschedule job %d", id), err)
	}
	return jobInfoOf(j), nil
}

// RescheduleTx is Reschedule inside tx, a transaction the application
// began on its store's database (glossary, Reschedule: "It can join the
// caller's transaction, the same as Transactional Enqueue"): the new due
// time and its audit record commit or roll back with the application's own
// writes. tx is what EnqueueTx takes (see Tx); a store without
// Transactional Enqueue, or a tx it cannot use, is an error wrapping
// ErrTxUnsupported and nothing is written. BackWave never commits or rolls
// back tx.
func (a *Admin) RescheduleTx(ctx context.Context, tx Tx, id JobID, at time.Time) (JobInfo, error) {
	what := fmt.Sprintf("reschedule job %d in the caller's transaction", id)
	ins, ok := a.store.(store.TxInserter)
	if !ok {
		return JobInfo{}, fmt.Errorf("backwave: %s: %w: the store (%T) has no Transactional Enqueue", what, ErrTxUnsupported, a.store)
	}
	j, err := ins.JobRescheduleInTx(ctx, tx, store.JobRescheduleParams{ID: id, Actor: store.Actor(a.actor), ScheduledAt: at})
	if err != nil {
		return JobInfo{}, actionErr(what, err)
	}
	return jobInfoOf(j), nil
}
