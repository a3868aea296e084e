package backwave

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobInfo is a stored job as the Monitor shows it: the row a store holds,
// read at one instant. Times are on the store's clock.
type JobInfo struct {
	ID       JobID
	WireName string
	Queue    string
	State    JobState
	// Attempt is the last Attempt charged (0 if the job was never
	// claimed). Attempt numbers are never reused.
	Attempt Attempt
	// MaxAttempts is the attempt budget of one life of the job.
	MaxAttempts int
	// Ceiling is the Attempt number at which the current life is spent: an
	// Attempt at or past it that fails dead-letters the job. It is
	// MaxAttempts above the Attempt the job stood at when an operator last
	// requeued it (or MaxAttempts, if never).
	Ceiling int
	// ScheduledAt is the due time: a Scheduled job is claimable once the
	// store's clock reaches it.
	ScheduledAt time.Time
	CreatedAt   time.Time
	// FinalizedAt is when the job reached a terminal state; zero while it
	// is live.
	FinalizedAt time.Time
	// RetryCause says why the job last went back to Scheduled after an
	// Attempt went wrong.
	RetryCause RetryCause
	// CancelCause says why a Cancelled job was cancelled.
	CancelCause CancelCause
	// Worker holds the Lease of a Running job, until LeaseExpiresAt.
	Worker         string
	LeaseExpiresAt time.Time
	// CancelRequested is set when an operator asked a Running job to stop;
	// its worker learns it at the next heartbeat.
	CancelRequested bool
	Tags            []Tag
	// Payload is the encoded job args (JSON), written once at enqueue.
	Payload []byte
	// Progress is what the job's handler last reported with
	// Job.ReportProgress, nil if nothing was.
	Progress *Progress
}

// Retrying reports whether the job is in the Retrying view: Scheduled and
// carrying a Retry Cause.
func (j JobInfo) Retrying() bool { return j.State == StateScheduled && j.RetryCause != RetryCauseNone }

func jobInfoOf(j job.Job) JobInfo {
	return JobInfo{
		ID: j.ID, WireName: j.WireName, Queue: j.Queue, State: JobState(j.State),
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Ceiling: j.Ceiling(),
		ScheduledAt: j.ScheduledAt, CreatedAt: j.CreatedAt, FinalizedAt: j.FinalizedAt,
		RetryCause: RetryCause(j.RetryCause), CancelCause: CancelCause(j.CancelCause),
		Worker: string(j.Worker), LeaseExpiresAt: j.LeaseExpiresAt, CancelRequested: j.CancelRequested,
		Tags: tagsOf(j.Tags), Payload: j.Payload, Progress: progressOf(j.Progress),
	}
}

// Transition is one entry of a job's Transition Log: at At, by Via, the job
// moved from From to State, its Attempt then being Attempt. The log is
// append-only, written by the store with the state change it records, and
// bounded per job; how much is kept is the store's Job History Policy.
type Transition struct {
	At time.Time
	// From is StateUnknown for the insert entry.
	From    JobState
	State   JobState
	Via     Via
	Attempt Attempt
	// FailureDetail is the bounded diagnostic text a failed Attempt (or an
	// unroutable job's quarantine) carried; empty otherwise, and under a
	// Job History Policy without detail.
	FailureDetail string
	// Seq is the entry's Transition Log sequence number: the key a
	// Transition Observer sees (ObservedTransition.Seq) and dedupes on, so
	// a log read here and a notification can be matched.
	Seq int64
}

func transitionsOf(trs []store.Transition) []Transition {
	out := make([]Transition, len(trs))
	for i, t := range trs {
		out[i] = Transition{At: t.At, From: JobState(t.From), State: JobState(t.State), Via: Via(t.Via), Attempt: t.Attempt, FailureDetail: t.FailureDetail, Seq: t.Seq}
	}
	return out
}

// JobDetail is one job as the Monitor's job page shows it: the row, its
// Transition Log and its Job Output.
type JobDetail struct {
	Job JobInfo
	// Transitions is the Transition Log, oldest entry first.
	Transitions []Transition
	// Output is the Job Output, nil if none.
	Output []byte
}

// JobFilter selects jobs for Admin.Jobs and Admin.TagFacet. Every set field
// must match.
type JobFilter struct {
	// States, if non-empty, keeps jobs in any of them.
	States []JobState
	// Queue, if set, keeps jobs of that Queue.
	Queue string
	// WireName, if set, keeps jobs of that Wire Name.
	WireName string
	// Tags, if non-empty, keeps jobs carrying every one of them, matched
	// exactly: key, value and casing (Tag Suggest helps compose them).
	Tags []Tag
	// Retrying keeps only the Retrying view: Scheduled jobs carrying a
	// Retry Cause.
	Retrying bool
	// CreatedFrom, if non-zero, keeps jobs created at or after it.
	CreatedFrom time.Time
	// CreatedTo, if non-zero, keeps jobs created before it.
	CreatedTo time.Time
}

func (f JobFilter) store() store.JobFilter {
	return store.JobFilter{
		States: jobStates(f.States), Queue: f.Queue, WireName: f.WireName, Tags: jobTags(f.Tags),
		Retrying: f.Retrying, CreatedFrom: f.CreatedFrom, CreatedTo: f.CreatedTo,
	}
}

// JobListParams filter and page Admin.Jobs.
type JobListParams struct {
	JobFilter
	PageParams
}

// Paging of Monitor lists.
const (
	// DefaultPageLimit is the page size when PageParams.Limit is 0.
	DefaultPageLimit = 100
	// MaxPageLimit bounds a page; a larger Limit is cut to it.
	MaxPageLimit = 10_000
)

// Cursor is a keyset position in a Monitor list. Every list runs newest
// first, and a Cursor is the key of the last entry a page holds: a JobID
// for jobs, an AuditEntry.ID for the audit trail, an Occurrence.Seq for a
// schedule's occurrence records. Paging by key, not by offset, never skips
// or repeats an entry while new ones arrive. The zero Cursor is the newest
// end of the list.
type Cursor int64

// PageParams ask for one page of a Monitor list.
type PageParams struct {
	// Before, if non-zero, keeps the entries older than it: pass the
	// previous page's Next.
	Before Cursor
	// Limit is the page size: DefaultPageLimit if 0, at most MaxPageLimit.
	Limit int
}

// limit returns the effective page size, or an error wrapping
// ErrInvalidParams for a negative Limit or Before.
func (p PageParams) limit() (int, error) {
	switch {
	case p.Limit < 0:
		return 0, fmt.Errorf("%w: page limit %d is negative", ErrInvalidParams, p.Limit)
	case p.Before < 0:
		return 0, fmt.Errorf("%w: cursor %d is negative", ErrInvalidParams, p.Before)
	case p.Limit == 0:
		return DefaultPageLimit, nil
	}
	return min(p.Limit, MaxPageLimit), nil
}

// Page is one page of a Monitor list, newest first.
type Page[T any] struct {
	Items []T
	// Next is the Before of the following page; zero when this page is the
	// last. A page shorter than its limit is the last; a full one may be
	// followed by an empty page.
	Next Cursor
}

// readPage reads the page p asks for of a Monitor list: fetch reads up to
// limit rows from the store, conv converts one, key is an entry's Cursor.
// Errors say what was read.
func readPage[S, T any](p PageParams, what string, fetch func(limit int) ([]S, error), conv func(S) T, key func(*T) Cursor) (Page[T], error) {
	limit, err := p.limit()
	var rows []S
	if err == nil {
		rows, err = fetch(limit)
	}
	if err != nil {
		return Page[T]{}, fmt.Errorf("backwave: %s: %w", what, err)
	}
	page := Page[T]{Items: make([]T, len(rows))}
	for i, r := range rows {
		page.Items[i] = conv(r)
	}
	if len(rows) > 0 && len(rows) >= limit {
		page.Next = key(&page.Items[len(rows)-1])
	}
	return page, nil
}

// QueueInfo is one Queue as the Monitor shows it: its settings and how many
// of its jobs are Running.
type QueueInfo struct {
	Name   string
	Paused bool
	// Limit is the cluster-wide Concurrency Limit; 0 when there is none.
	Limit int
	// Running is the number of Running jobs: the slots in use.
	Running int
	// Rate is the cluster-wide Rate Limit; the zero QueueRate when there is
	// none.
	Rate QueueRate
	// RateStarted is how many jobs started in the Rate's current window
	// (the one holding the store's now): Rate.Limit less it is what the
	// window still allows. 0 without a Rate.
	RateStarted int
}

// QueueStateCount is the number of jobs of one Queue in one state.
type QueueStateCount struct {
	Queue string
	State JobState
	Count int
}

// TagCount is one bucket of a Tag Facet: a Tag and how many jobs of the
// filtered slice carry it.
type TagCount struct {
	Tag   Tag
	Count int
}

// DependencyInfo is a job's place in the Dependency graph: the parents that
// gate it and the jobs it gates.
type DependencyInfo struct {
	// Mode is how the job reacts to its parents; meaningful when it has
	// parents.
	Mode DependencyMode
	// Parents lists the job's parents in ascending id order.
	Parents []ParentEdge
	// Pending is how many parents the job's latch has not counted yet:
	// zero once the job was released or cancelled by its parents. A job an
	// operator cancelled while it waited keeps the count it had.
	Pending int
	// Dependents lists the jobs that name this one as a parent, ascending.
	Dependents []JobID
}

// ParentEdge is one Dependency parent of a job.
type ParentEdge struct {
	ID JobID
	// State is the parent's state now.
	State JobState
	// Counted says the dependent's latch has counted this parent: it
	// reached a terminal state. It stays true if an operator later
	// requeues the parent.
	Counted bool
}

func dependencyInfoOf(d store.DependencyInfo) DependencyInfo {
	out := DependencyInfo{Mode: DependencyMode(d.Mode), Pending: d.Pending(), Dependents: d.Dependents}
	for _, p := range d.Parents {
		out.Parents = append(out.Parents, ParentEdge{ID: p.ID, State: JobState(p.State), Counted: p.Counted})
	}
	return out
}
