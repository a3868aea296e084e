package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/backwave/backwave/job"
)

// Actor is the recorded identity behind an Operator Action: a user name, a
// service account, "cli:alice". BackWave never owns users; the host decides
// what the string means. It is stored verbatim in the audit trail.
type Actor string

// ActorSystem is recorded when an action's params name no Actor: the host
// application's own code (configuration at start-up, a test) rather than a
// person.
const ActorSystem Actor = "system"

// MaxActorLen bounds an Actor, in bytes.
const MaxActorLen = 256

// OrSystem returns a, or ActorSystem if a is empty.
func (a Actor) OrSystem() Actor {
	if a == "" {
		return ActorSystem
	}
	return a
}

// Validate accepts the empty Actor (recorded as ActorSystem) and any valid
// UTF-8 of at most MaxActorLen bytes without control characters.
func (a Actor) Validate() error {
	switch {
	case len(a) > MaxActorLen:
		return fmt.Errorf("%w: actor is longer than %d bytes", ErrInvalidParams, MaxActorLen)
	case !utf8.ValidString(string(a)):
		return fmt.Errorf("%w: actor %q is not valid UTF-8", ErrInvalidParams, string(a))
	}
	for _, r := range a {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: actor %q contains a control character", ErrInvalidParams, string(a))
		}
	}
	return nil
}

// Operator is the audited write side: the Operator Actions on jobs. Each is
// a defined action, never a raw row edit, and each writes one audit record
// (AuditEntry) naming its Actor atomically with its effect. An action the
// job's current state does not allow fails with ErrIllegalTransition and
// writes nothing; an unknown job is ErrNotFound. The Queue actions (pause,
// resume, set a Concurrency Limit, a Rate Limit or a key policy, remove an
// empty Queue) are on Queues and are audited the same way.
type Operator interface {
	// JobRequeue moves a Dead-Lettered or Quarantined job back to
	// Scheduled, due at the store's now, through the state machine (a
	// Transition Log entry by requeue). The requeued job starts over: its
	// Retry Cause is cleared (glossary, Retry Cause) and it gets a fresh
	// attempt budget of MaxAttempts tries — its Attempt counter is kept,
	// never reused (the fence needs every Attempt number to name one try),
	// and AttemptBase records where the new budget starts. Any other state
	// is ErrIllegalTransition.
	JobRequeue(ctx context.Context, p JobRequeueParams) (job.Job, error)

	// JobCancel is the operator cancel. A Scheduled or Awaiting-Parent job
	// becomes Cancelled at once with cancel cause operator. A Running job
	// gets CancelRequested: its worker learns it at the next LeaseRenew
	// (RenewCancelRequested) and stops its handler cooperatively, and
	// whatever way that Attempt then ends — any outcome, a lapsed Lease, a
	// Relinquish — the job ends Cancelled (see Worker). Asking again is
	// harmless and audited again. A terminal job is ErrIllegalTransition.
	// It returns the job as the action left it.
	JobCancel(ctx context.Context, p JobCancelParams) (job.Job, error)

	// JobReschedule moves the due time of a waiting (Scheduled or
	// Awaiting-Parent) job to p.DueAt(the store's now). The job keeps its id, payload,
	// Attempt and Retry Cause; no Transition Log entry is written, because
	// the state does not change (glossary, Reschedule). A Running or
	// terminal job is ErrIllegalTransition.
	JobReschedule(ctx context.Context, p JobRescheduleParams) (job.Job, error)

	// JobDelete removes one terminal job (Succeeded, Dead-Lettered,
	// Quarantined or Cancelled) with everything retention removes beside
	// it — payload, Tags (and a Tag no job left carries leaves Tag
	// Suggest's dictionary), Transition Log, Job Output, its own
	// Dependency edges, its schedule occurrence record, and its Workflow's
	// row with the Workflow's last member — atomically with an audit
	// record (AuditDelete, Detail DeleteDetail of its Wire Name) that
	// outlives it. It returns the job as it was removed. A live job is
	// ErrIllegalTransition. The rule of JobPurge about jobs others still
	// need holds here too: a job still a Dependency parent of a job the
	// store holds, a member of a Workflow with a live member, and a job
	// holding a Transition Log entry a live Transition Observer
	// registration was not yet walked past are refused with an error
	// wrapping ErrStillNeeded. Either refusal changes nothing and writes
	// no audit record. An unknown job is ErrNotFound.
	JobDelete(ctx context.Context, p JobDeleteParams) (job.Job, error)
}

// ErrStillNeeded is JobDelete's refusal of a terminal job that retention
// would keep too: its dependents, a live member of its Workflow or a
// Transition Observer still need it.
var ErrStillNeeded = errors.New("store: job still needed")

// Why JobDelete refuses a job others still need, as its error says it
// (wrapped with ErrStillNeeded).
const (
	// StillNeededDependents: a stored job depends on it.
	StillNeededDependents = "a stored job depends on it (delete its dependents first)"
	// StillNeededWorkflow: its Workflow has a live member.
	StillNeededWorkflow = "its Workflow has a live member"
	// StillNeededObserver: a Transition Observer has not yet read its
	// Transition Log.
	StillNeededObserver = "a Transition Observer has not yet read its Transition Log (try again shortly)"
)

// StillNeededError is JobDelete's refusal of job ID for Why, one of the
// StillNeeded constants. It wraps ErrStillNeeded.
type StillNeededError struct {
	ID  job.ID
	Why string
}

func (e *StillNeededError) Error() string {
	return "delete job " + strconv.FormatInt(int64(e.ID), 10) + ": " + e.Why + "; retention keeps it too"
}

// Unwrap returns ErrStillNeeded.
func (e *StillNeededError) Unwrap() error { return ErrStillNeeded }

// StillNeeded is the error of JobDelete refusing job id for why, one of the
// StillNeeded constants: a *StillNeededError.
func StillNeeded(id job.ID, why string) error { return &StillNeededError{ID: id, Why: why} }

// CheckStillNeeded is the rule of JobDelete about jobs others still need,
// which every adapter applies to what it read of terminal job id inside the
// delete's own atomic step: whether a stored job depends on it, whether its
// Workflow has a live member, and whether a live Transition Observer
// registration was not yet walked past its Transition Log. Any of them
// refuses the delete, with the first reason, as a *StillNeededError.
func CheckStillNeeded(id job.ID, dependents, workflowLive, unread bool) error {
	switch {
	case dependents:
		return StillNeeded(id, StillNeededDependents)
	case workflowLive:
		return StillNeeded(id, StillNeededWorkflow)
	case unread:
		return StillNeeded(id, StillNeededObserver)
	}
	return nil
}

// JobDeleteParams are the params of Operator.JobDelete.
type JobDeleteParams struct {
	ID    job.ID
	Actor Actor
}

// Validate checks the params of JobDelete.
func (p JobDeleteParams) Validate() error { return checkAction(p.ID, p.Actor) }

// JobRequeueParams are the params of Operator.JobRequeue.
type JobRequeueParams struct {
	ID    job.ID
	Actor Actor
}

// JobCancelParams are the params of Operator.JobCancel.
type JobCancelParams struct {
	ID    job.ID
	Actor Actor
}

// JobRescheduleParams are the params of Operator.JobReschedule.
type JobRescheduleParams struct {
	ID    job.ID
	Actor Actor
	// ScheduledAt is the new due time, in years MinYear to MaxYear; or
	// zero, with After set.
	ScheduledAt time.Time
	// After, when ScheduledAt is zero, sets the new due time this long
	// after now on the store's clock (the clock every due comparison
	// reads), inside the action's own transaction: "in an hour" means an
	// hour of the store's time, whatever a caller's clock says. It must be
	// positive. Exactly one of ScheduledAt and After is set.
	After time.Duration
}

// DueAt is the new due time of p at now, the store's time inside the
// action: ScheduledAt, or now plus After.
func (p JobRescheduleParams) DueAt(now time.Time) time.Time {
	if p.ScheduledAt.IsZero() {
		return now.Add(p.After)
	}
	return p.ScheduledAt
}

// Validate checks the params of JobRequeue.
func (p JobRequeueParams) Validate() error { return checkAction(p.ID, p.Actor) }

// Validate checks the params of JobCancel.
func (p JobCancelParams) Validate() error { return checkAction(p.ID, p.Actor) }

// Validate checks the params of JobReschedule.
func (p JobRescheduleParams) Validate() error {
	if err := checkAction(p.ID, p.Actor); err != nil {
		return err
	}
	switch {
	case p.ScheduledAt.IsZero() && p.After == 0:
		return fmt.Errorf("%w: reschedule job %d without a due time", ErrInvalidParams, p.ID)
	case !p.ScheduledAt.IsZero() && p.After != 0:
		return fmt.Errorf("%w: reschedule job %d: both a due time and After %v (give one)", ErrInvalidParams, p.ID, p.After)
	case p.ScheduledAt.IsZero() && (p.After < 0 || p.After > 100*365*24*time.Hour):
		return fmt.Errorf("%w: reschedule job %d: After %v (want a positive duration of at most 100 years)", ErrInvalidParams, p.ID, p.After)
	case p.ScheduledAt.IsZero():
		return nil
	}
	if err := ValidateTime("new due time", p.ScheduledAt); err != nil {
		return fmt.Errorf("reschedule job %d: %w", p.ID, err)
	}
	return nil
}

func checkAction(id job.ID, a Actor) error {
	if id < 1 {
		return fmt.Errorf("%w: job id %d", ErrInvalidParams, id)
	}
	return a.Validate()
}

// AuditAction names an Operator Action in the audit trail.
type AuditAction uint8

const (
	// AuditRequeue is JobRequeue.
	AuditRequeue AuditAction = iota + 1
	// AuditCancel is JobCancel of a waiting job (it became Cancelled).
	AuditCancel
	// AuditCancelRequest is JobCancel of a Running job (cancel requested).
	AuditCancelRequest
	// AuditReschedule is JobReschedule.
	AuditReschedule
	// AuditQueuePause is QueuePause.
	AuditQueuePause
	// AuditQueueResume is QueueResume.
	AuditQueueResume
	// AuditQueueSetLimit is QueueSetLimit.
	AuditQueueSetLimit
	// AuditScheduleTrigger is ScheduleTrigger (Detail names the schedule).
	AuditScheduleTrigger
	// AuditSchedulePause is SchedulePause.
	AuditSchedulePause
	// AuditScheduleResume is ScheduleResume.
	AuditScheduleResume
	// AuditScheduleRemove is ScheduleRemove.
	AuditScheduleRemove
	// AuditQueueSetRate is QueueSetRate (Detail is RateDetail).
	AuditQueueSetRate
	// AuditWorkflowCancel is WorkflowCancel (Detail names the Workflow).
	AuditWorkflowCancel
	// AuditWorkflowRestart is a WorkflowInsert with RestartOf (Detail names
	// the original Workflow and the new one).
	AuditWorkflowRestart
	// AuditWorkflowRetry is WorkflowRetry (Detail names the Workflow and
	// the scope).
	AuditWorkflowRetry
	// AuditUniqueReplace is an insert in UniqueReplace mode rewriting the
	// Scheduled holder of its unique key (Detail is RewriteDetail). The
	// Actor is the system: an enqueue names none.
	AuditUniqueReplace
	// AuditUniqueDebounce is an insert in UniqueDebounce mode rewriting
	// the Scheduled holder of its unique key (Detail is RewriteDetail).
	AuditUniqueDebounce
	// AuditQueueSetKeyLimit is QueueSetKeyLimit (Detail is KeyLimitDetail).
	AuditQueueSetKeyLimit
	// AuditQueueSetKeyRate is QueueSetKeyRate (Detail is KeyRateDetail).
	AuditQueueSetKeyRate
	// AuditQueueSetFairClaim is QueueSetFairClaim (Detail is
	// FairClaimDetail).
	AuditQueueSetFairClaim
	// AuditQueueRemove is QueueRemove.
	AuditQueueRemove
	// AuditEnqueue is an insert with InsertManyParams.Actor: an operator
	// enqueued the job (Detail is EnqueueDetail).
	AuditEnqueue
	// AuditDelete is JobDelete (Detail is DeleteDetail). It outlives the
	// job it names.
	AuditDelete
)

var auditNames = [...]string{
	AuditRequeue:       "requeue",
	AuditCancel:        "cancel",
	AuditCancelRequest: "cancel_request",
	AuditReschedule:    "reschedule",
	AuditQueuePause:    "queue_pause",
	AuditQueueResume:   "queue_resume",
	AuditQueueSetLimit: "queue_set_limit",

	AuditScheduleTrigger: "schedule_trigger",
	AuditSchedulePause:   "schedule_pause",
	AuditScheduleResume:  "schedule_resume",
	AuditScheduleRemove:  "schedule_remove",
	AuditQueueSetRate:    "queue_set_rate",

	AuditWorkflowCancel:  "workflow_cancel",
	AuditWorkflowRestart: "workflow_restart",
	AuditWorkflowRetry:   "workflow_retry",

	AuditUniqueReplace:     "unique_replace",
	AuditUniqueDebounce:    "unique_debounce",
	AuditQueueSetKeyLimit:  "queue_set_key_limit",
	AuditQueueSetKeyRate:   "queue_set_key_rate",
	AuditQueueSetFairClaim: "queue_set_fair_claim",
	AuditQueueRemove:       "queue_remove",
	AuditEnqueue:           "enqueue",
	AuditDelete:            "delete",
}

// EnqueueDetail is the Detail of an AuditEnqueue entry: the job's Wire
// Name.
func EnqueueDetail(wireName string) string { return "wire_name " + strconv.Quote(wireName) }

// DeleteDetail is the Detail of an AuditDelete entry: the removed job's
// Wire Name, in EnqueueDetail's form, so the trail still says what the job
// was once it is gone.
func DeleteDetail(wireName string) string { return EnqueueDetail(wireName) }

// String returns the stored name of the action.
func (a AuditAction) String() string {
	if int(a) < len(auditNames) && auditNames[a] != "" {
		return auditNames[a]
	}
	return "audit_action(" + strconv.Itoa(int(a)) + ")"
}

// ParseAuditAction is the inverse of AuditAction.String.
func ParseAuditAction(s string) (AuditAction, error) {
	for a, name := range auditNames {
		if name != "" && name == s {
			return AuditAction(a), nil
		}
	}
	return 0, fmt.Errorf("store: unknown audit action %q", s)
}

// AuditEntry is one record of the audit trail: who did what, when, to which
// job or Queue. The audit trail is not the Transition Log (glossary,
// Transition Log, Avoid: audit): it records Operator Actions, including
// those that change no state.
type AuditEntry struct {
	// ID orders the trail; the store assigns it.
	ID     int64
	At     time.Time
	Actor  Actor
	Action AuditAction
	// JobID is the job acted on; 0 for a Queue action.
	JobID job.ID
	// Queue is the job's Queue, or the Queue acted on.
	Queue string
	// Detail says what changed, e.g. "limit 5" or the new due time.
	Detail string
}

// AuditListParams filter and page Monitor.AuditList.
type AuditListParams struct {
	// JobID, if non-zero, keeps the entries about that job.
	JobID job.ID
	// Queue, if set, keeps the entries about that Queue (its jobs' and its
	// own).
	Queue string
	// BeforeID, if non-zero, keeps entries with a smaller id (keyset cursor).
	BeforeID int64
	// Limit is the page size; 0 means 100.
	Limit int
}

// PageLimit returns the effective page size of an AuditList call.
func (p AuditListParams) PageLimit() int {
	if p.Limit <= 0 {
		return 100
	}
	return min(p.Limit, 10_000)
}

// RescheduleDetail is the Detail of a reschedule to t.
func RescheduleDetail(t time.Time) string { return "scheduled_at " + t.UTC().Format(time.RFC3339Nano) }

// RewriteAction is the audit action of a rewrite in mode m (UniqueReplace
// or UniqueDebounce).
func RewriteAction(m UniqueMode) AuditAction {
	if m == UniqueDebounce {
		return AuditUniqueDebounce
	}
	return AuditUniqueReplace
}

// RewriteDetail is the Detail of a unique key's holder rewritten: the key
// and the holder's new due time.
func RewriteDetail(key string, due time.Time) string {
	return "key " + strconv.Quote(key) + " " + RescheduleDetail(due)
}

// LimitDetail is the Detail of setting a Concurrency Limit.
func LimitDetail(limit int) string { return "limit " + strconv.Itoa(limit) }

// ErrQueueNotEmpty is QueueRemove's refusal of a Queue that still holds
// jobs (QueueNotEmptyError says how many and what to do).
var ErrQueueNotEmpty = errors.New("store: queue not empty")

// QueueNotEmptyError is QueueRemove's refusal of a Queue holding Jobs jobs.
// It wraps ErrQueueNotEmpty.
type QueueNotEmptyError struct {
	Queue string
	Jobs  int
}

func (e *QueueNotEmptyError) Error() string {
	n := "1 job"
	if e.Jobs != 1 {
		n = strconv.Itoa(e.Jobs) + " jobs"
	}
	return "remove queue " + Echo(e.Queue) + ": it holds " + n + " (in any state: finished ones count until retention purges them); " +
		"only an empty Queue can be removed: cancel or finish its jobs, and remove it once retention has purged them"
}

// Unwrap returns ErrQueueNotEmpty.
func (e *QueueNotEmptyError) Unwrap() error { return ErrQueueNotEmpty }

// CheckQueueEmpty is the rule of QueueRemove, which every adapter applies
// to the number of jobs it holds in the Queue, read inside the removal's
// own atomic step: only a Queue holding no job, in any state, may be
// removed. A terminal job counts until retention purges it, so that no
// stored job ever names a Queue the store does not know. The refusal is a
// *QueueNotEmptyError.
func CheckQueueEmpty(queue string, jobs int) error {
	if jobs == 0 {
		return nil
	}
	return &QueueNotEmptyError{Queue: queue, Jobs: jobs}
}
