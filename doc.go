// Package backwave is a background job system: enqueue work, it runs once on
// some worker, with retries. Storage rides on a database the application
// already runs (see package store and its adapters).
//
// # Job args and Wire Names
//
// A job's arguments are a Go type implementing JobArgs. Its WireName is the
// job type's identity in storage: mandatory, explicit and stable across
// refactors — it is never derived from the Go type's name. Arguments are
// stored as JSON. An args type may also implement JobOptions to give its jobs
// a default Queue, attempt budget (MaxAttempts) and Tags.
//
//	type SendEmail struct{ To string }
//
//	func (SendEmail) WireName() string { return "send_email" }
//
// # Handlers
//
// Handlers are registered per Wire Name in a Handlers registry (NewHandlers)
// with AddHandler or AddHandlerFunc. A handler returns nil on success and an error to fail the
// Attempt (retried by the retry policy up to the attempt ceiling); wrap the
// error with FailPermanently to dead-letter the job at once. A handler panic
// fails the Attempt with the stack as Failure Detail. A job whose Wire Name
// has no handler, or whose payload no longer decodes, is Quarantined — loudly,
// never retried.
//
// A handler sees its Attempt number (Job.Attempt: never reused, the number
// the logs and the Transition Log show) and the attempt ceiling that applies
// to it (Job.AttemptCeiling): an Attempt at or past the ceiling that fails
// dead-letters the job. A job's first life runs Attempts 1 to its attempt
// budget (MaxAttempts); an operator requeue grants a fresh budget above the
// Attempt the job reached, so a job with MaxAttempts 5 that dead-lettered
// and was requeued runs Attempt 6 of ceiling 10 next.
//
// Delivery is at-least-once: a handler may run more than once for one job (a
// node may lose its Lease and another run the job again), so handlers must be
// idempotent. Each Attempt's outcome still applies exactly once (the
// Effect-Once fence).
//
// # Transactional Enqueue
//
// EnqueueTx and EnqueueManyTx enqueue inside a transaction the application
// owns (a *sql.Tx, or a pgx.Tx on PostgreSQL; see Tx), so the jobs commit
// or roll back with its business writes; they build the jobs exactly as
// Enqueue does. BackWave never commits or rolls back that transaction.
// Wake-Up Hints for those jobs fire only after the commit (PostgreSQL's
// NOTIFY) or not at all (SQLite: workers find the jobs at their next
// poll). On SQLite, sqlite.OpenDB puts the store on the application's own
// *sql.DB.
//
// # Worker Groups
//
// A Client runs one or more Worker Groups. Each has a Dispatch Policy over the
// Queues it serves (Strict or Weighted), a PoolSize that bounds its concurrent
// handlers (Backpressure), and the Lease, heartbeat, batching, polling and
// maintenance knobs of the Node Driver. A Client without groups only
// enqueues.
//
// # Unique keys
//
// WithUnique stores a job only if no other job holds its unique key, in one
// of two scopes: UniqueWhileLive (until the holder ends terminal) or
// UniqueFor(d) (for d after the holder's enqueue, whatever its state). A
// held key is a result, not an error: Enqueue returns the holder's id, and
// EnqueueUnique says Inserted false. The store enforces the rule with a
// unique index, so it holds across every process.
//
// # Rate Limits
//
// A Queue's Rate Limit (Admin.SetQueueRate, `backwave queues rate`) bounds
// how many of its jobs start per fixed window of a period, cluster-wide,
// counted by the store at claim like the Concurrency Limit — which bounds
// how many Run at once — and apart from Backpressure, a node's own pool. A
// claim takes what all three allow; when a spent window reopens the Pumps
// poll again at that instant, with no busy loop. See docs/rate-limits.md.
//
// # Concurrency Keys
//
// A job may carry one Concurrency Key (WithConcurrencyKey("acme")): whose
// work it is. Unlike a Tag, the claim reads it. Per Queue, a Key Limit
// (Admin.SetKeyLimit) caps the Running jobs of one key, a Key Rate
// (Admin.SetKeyRate) caps its starts per window, and Fair Claim
// (Admin.SetFairClaim) takes due jobs round-robin across keys, so one key's
// flood does not hold up the others. Admin.QueueKeys lists a Queue's keys
// with the most jobs. See docs/concurrency-keys.md.
//
// # Recurring Schedules
//
// A RecurringSchedule is a cron-defined template that mints jobs as time
// passes, in UTC or an IANA zone (with cron users' rules across daylight
// saving). Schedules are stored: declare them in Config.Schedules or call
// RegisterSchedule, and every Client running Worker Groups mints them on its
// maintenance beat, idempotently, so no occurrence is minted twice however
// many nodes run. Occurrences missed while no node ran are skipped (the
// default) or made up by exactly one job (CatchUpCoalesce); NoOverlap skips
// an occurrence while the previous instance is still live. Skips are
// recorded (Admin.ScheduleOccurrences). Admin.TriggerSchedule,
// PauseSchedule and ResumeSchedule are audited Operator Actions.
//
// # Monitor and Operator Actions
//
// Admin is the one home of the Monitor reads — a job with its Transition
// Log, job lists by filter, the Retrying view, counts by state and by
// Queue, Queues, the Tag Facet and Tag Suggest, Dependencies, Recurring
// Schedules and their occurrences, the audit trail — and of the audited
// Operator Actions: requeue, cancel, reschedule, trigger a schedule, pause
// and resume a Queue or a schedule, set a Queue's Concurrency Limit. Open
// one over a store with NewAdmin, naming the Actor the audit trail records;
// no Client is needed. Lists page by keyset: each Page carries the Cursor of
// the next. Application code that only reads a job calls Client.JobGet.
//
// # Job History Policy
//
// Every store records each job's Transition Log, with Failure Detail, by
// default. The Job History Policy lowers that for a whole store: set it in
// the store URI ("?history=transitions" drops Failure Detail,
// "?history=off" records no Transition Log; "mem://?history=off" works
// too) or in the adapter's Options.History. Job Output is kept whatever
// the policy. Config.FailureDetailOff stops a Client capturing Failure
// Detail at all.
//
// # Retention
//
// Terminal jobs stay in the store until a RetentionPolicy (Config.Retention)
// purges them, with everything stored beside them, in bounded batches on
// the maintenance beat: Succeeded and Cancelled jobs after KeepSucceeded,
// Dead-Lettered and Quarantined ones after KeepDeadLettered.
//
// # Shutdown
//
// Client.Stop stops claiming, lets running handlers finish for DrainTimeout,
// then cancels the rest (context.Cause is ErrShutdown) and relinquishes their
// Leases so other nodes pick the jobs up at once: Scheduled and due now, at
// the Attempt the claim charged, with its Retry Cause left as it was (a
// clean stop is not a failure and adds none, so a deploy raises no Retrying
// alarm). A job relinquished at its attempt ceiling dead-letters.
package backwave
