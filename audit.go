package backwave

import "github.com/backwave/backwave/store"

// Actor is the recorded identity behind an Operator Action: a user name, a
// service account, "cli:alice". BackWave never owns users; the host decides
// what the string means, and the audit trail stores it verbatim. It is
// valid UTF-8 of at most 256 bytes without control characters.
type Actor string

// ActorSystem is the Actor recorded for the application's own code, such as
// Client.RemoveSchedule, rather than a person.
const ActorSystem Actor = Actor(store.ActorSystem)

// Validate reports whether the Actor can be recorded: valid UTF-8 of at most
// 256 bytes without control characters. The error wraps ErrInvalidParams.
func (a Actor) Validate() error { return store.Actor(a).Validate() }

// AuditAction names an Operator Action in the audit trail.
type AuditAction uint8

// The Operator Actions the audit trail records.
const (
	// AuditRequeue is Admin.Requeue.
	AuditRequeue AuditAction = AuditAction(store.AuditRequeue)
	// AuditCancel is Admin.Cancel of a waiting job: it became Cancelled.
	AuditCancel AuditAction = AuditAction(store.AuditCancel)
	// AuditCancelRequest is Admin.Cancel of a Running job: its cancel was
	// requested.
	AuditCancelRequest AuditAction = AuditAction(store.AuditCancelRequest)
	// AuditReschedule is Admin.Reschedule.
	AuditReschedule AuditAction = AuditAction(store.AuditReschedule)
	// AuditQueuePause is Admin.PauseQueue.
	AuditQueuePause AuditAction = AuditAction(store.AuditQueuePause)
	// AuditQueueResume is Admin.ResumeQueue.
	AuditQueueResume AuditAction = AuditAction(store.AuditQueueResume)
	// AuditQueueSetLimit is Admin.SetQueueLimit.
	AuditQueueSetLimit AuditAction = AuditAction(store.AuditQueueSetLimit)
	// AuditScheduleTrigger is Admin.TriggerSchedule; Detail names the
	// schedule.
	AuditScheduleTrigger AuditAction = AuditAction(store.AuditScheduleTrigger)
	// AuditSchedulePause is Admin.PauseSchedule.
	AuditSchedulePause AuditAction = AuditAction(store.AuditSchedulePause)
	// AuditScheduleResume is Admin.ResumeSchedule.
	AuditScheduleResume AuditAction = AuditAction(store.AuditScheduleResume)
	// AuditScheduleRemove is Admin.RemoveSchedule or Client.RemoveSchedule.
	AuditScheduleRemove AuditAction = AuditAction(store.AuditScheduleRemove)
	// AuditQueueSetRate is Admin.SetQueueRate.
	AuditQueueSetRate AuditAction = AuditAction(store.AuditQueueSetRate)
	// AuditWorkflowCancel is Admin.CancelWorkflow; Detail names the
	// Workflow.
	AuditWorkflowCancel AuditAction = AuditAction(store.AuditWorkflowCancel)
	// AuditWorkflowRestart is Admin.RestartWorkflow; Detail names the
	// original Workflow and the new one.
	AuditWorkflowRestart AuditAction = AuditAction(store.AuditWorkflowRestart)
	// AuditWorkflowRetry is Admin.RetryWorkflow; Detail names the Workflow
	// and the scope.
	AuditWorkflowRetry AuditAction = AuditAction(store.AuditWorkflowRetry)
	// AuditUniqueReplace is an enqueue in Replace mode (UniqueScope.Replace)
	// rewriting the Scheduled holder of its unique key; Detail names the key
	// and the new due time, and the Actor is ActorSystem.
	AuditUniqueReplace AuditAction = AuditAction(store.AuditUniqueReplace)
	// AuditUniqueDebounce is an enqueue in Debounce mode
	// (UniqueScope.Debounce) rewriting the Scheduled holder of its unique
	// key; Detail names the key and the new due time.
	AuditUniqueDebounce AuditAction = AuditAction(store.AuditUniqueDebounce)
	// AuditQueueSetKeyLimit is Admin.SetKeyLimit; Detail is e.g.
	// "key limit 2" or "key limit none".
	AuditQueueSetKeyLimit AuditAction = AuditAction(store.AuditQueueSetKeyLimit)
	// AuditQueueSetKeyRate is Admin.SetKeyRate; Detail is e.g.
	// "key rate 10/1m0s".
	AuditQueueSetKeyRate AuditAction = AuditAction(store.AuditQueueSetKeyRate)
	// AuditQueueSetFairClaim is Admin.SetFairClaim; Detail is
	// "fair claim on" or "fair claim off".
	AuditQueueSetFairClaim AuditAction = AuditAction(store.AuditQueueSetFairClaim)
	// AuditQueueRemove is Admin.RemoveQueue.
	AuditQueueRemove AuditAction = AuditAction(store.AuditQueueRemove)
	// AuditEnqueue is Admin.Enqueue: an operator enqueued the job; Detail
	// names its Wire Name.
	AuditEnqueue AuditAction = AuditAction(store.AuditEnqueue)
	// AuditDelete is Admin.Delete: an operator removed the job; Detail
	// names its Wire Name. The entry outlives the job.
	AuditDelete AuditAction = AuditAction(store.AuditDelete)
)

// String returns the stored name of the action, e.g. "queue_set_limit".
func (a AuditAction) String() string { return store.AuditAction(a).String() }

// AuditListParams filter and page Admin.Audit.
type AuditListParams struct {
	// JobID, if non-zero, keeps the entries about that job.
	JobID JobID
	// Queue, if set, keeps the entries about that Queue: its jobs' and its
	// own.
	Queue string
	PageParams
}
