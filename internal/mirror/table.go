package mirror

// Convs returns the type table: how each source type a mirrored field has
// appears in the root package. A basic type, time.Time, error, and a slice
// or map of such types are used as they are without an entry.
func Convs() []Conv {
	const job, core, store, shell = Module + "/job.", Module + "/core.", Module + "/store.", Module + "/shell."
	return []Conv{
		{Source: job + "ID", Mirror: "JobID"},
		{Source: "[]" + job + "ID", Mirror: "[]JobID"},
		{Source: job + "Attempt", Mirror: "Attempt"},
		{Source: job + "WorkflowID", Mirror: "WorkflowID"},
		{Source: job + "WorkerID", Mirror: "string", To: "string(%s)"},
		{Source: job + "State", Mirror: "JobState", To: "JobState(%s)"},
		{Source: "[]" + job + "State", Mirror: "[]JobState", From: "jobStates(%s)"},
		{Source: "map[" + job + "State]int", Mirror: "map[JobState]int", To: "stateCounts(%s)"},
		{Source: job + "RetryCause", Mirror: "RetryCause", To: "RetryCause(%s)"},
		{Source: job + "CancelCause", Mirror: "CancelCause", To: "CancelCause(%s)"},
		{Source: job + "TerminalCause", Mirror: "TerminalCause", To: "TerminalCause(%s)"},
		{Source: job + "DependencyMode", Mirror: "DependencyMode", To: "DependencyMode(%s)"},
		{Source: job + "Tag", Mirror: "Tag", To: "Tag(%s)"},
		{Source: "[]" + job + "Tag", Mirror: "[]Tag", To: "tagsOf(%s)", From: "jobTags(%s)"},
		{Source: "*" + job + "Progress", Mirror: "*Progress", To: "progressOf(%s)"},
		{Source: "*" + job + "Cursor", Mirror: "*JobCursor", To: "jobCursorOf(%s)"},
		{Source: job + "Job", Mirror: "JobInfo", To: "jobInfoOf(%s)"},
		{Source: core + "Via", Mirror: "Via", To: "Via(%s)"},
		{Source: core + "SkipReason", Mirror: "SkipReason", To: "SkipReason(%s)"},
		{Source: store + "Actor", Mirror: "Actor", To: "Actor(%s)"},
		{Source: store + "AuditAction", Mirror: "AuditAction", To: "AuditAction(%s)"},
		{Source: store + "OccurrenceKind", Mirror: "OccurrenceKind", To: "OccurrenceKind(%s)"},
		{Source: store + "QueueRate", Mirror: "QueueRate", To: "QueueRate(%s)"},
		{Source: store + "KeyPolicy", Mirror: "KeyPolicy", To: "keyPolicyOf(%s)"},
		{Source: "[]" + store + "ParentEdge", Mirror: "[]ParentEdge", To: "parentEdgesOf(%s)"},
		{Source: "*" + shell + "StoreError", Mirror: "*StoreError", To: "storeErrorOf(%s)"},
	}
}

// Table returns every mirror, in the order mirror_gen.go declares them.
func Table() []Mirror {
	return []Mirror{
		{
			Name: "JobInfo", Source: "job.Job", Func: "jobInfoOf",
			Doc: `JobInfo is a stored job as the Monitor shows it: the row a store holds,
read at one instant. Times are on the store's clock.`,
			Fields: []Field{
				{Name: "ID"},
				{Name: "WireName"},
				{Name: "Queue"},
				{Name: "State"},
				{Name: "Attempt", Doc: `Attempt is the last Attempt charged (0 if the job was never
claimed). Attempt numbers are never reused.`},
				{Name: "MaxAttempts", Doc: `MaxAttempts is the attempt budget of one life of the job.`},
				{Name: "Ceiling", Expr: "s.Ceiling()", Type: "int", Uses: []string{"AttemptBase", "MaxAttempts"},
					Doc: `Ceiling is the Attempt number at which the current life is spent: an
Attempt at or past it that fails dead-letters the job. It is
MaxAttempts above the Attempt the job stood at when an operator last
requeued it (or MaxAttempts, if never), plus one for each Snooze since:
a snoozed Attempt is not charged.`},
				{Name: "Snoozes", Doc: `Snoozes is how many times the job's handler returned Snooze and the
snooze was applied without charging the Attempt, over the job's whole
existence (a requeue does not reset it; the snooze cap counts it).`},
				{Name: "ScheduledAt", Doc: `ScheduledAt is the due time: a Scheduled job is claimable once the
store's clock reaches it.`},
				{Name: "CreatedAt"},
				{Name: "FinalizedAt", Doc: `FinalizedAt is when the job reached a terminal state; zero while it
is live.`},
				{Name: "RetryCause", Doc: `RetryCause says why the job last went back to Scheduled after an
Attempt went wrong.`},
				{Name: "CancelCause", Doc: `CancelCause says why a Cancelled job was cancelled.`},
				{Name: "TerminalCause", Doc: `TerminalCause says why a Dead-Lettered or Quarantined job ended so:
ceiling reached or permanent failure, no handler or undecodable payload;
none in every other state.`},
				{Name: "Worker", Doc: `Worker holds the Lease of a Running job, until LeaseExpiresAt.`},
				{Name: "LeaseExpiresAt"},
				{Name: "CancelRequested", Doc: `CancelRequested is set when an operator asked a Running job to stop;
its worker learns it at the next heartbeat.`},
				{Name: "Tags"},
				{Name: "Payload", Doc: `Payload is the encoded job args (JSON), written once at enqueue.`},
				{Name: "Progress", Doc: `Progress is what the job's handler last reported with
Job.ReportProgress, nil if nothing was.`},
				{Name: "Cursor", Doc: `Cursor is the Cursor an Attempt of the job last saved with
Job.SaveCursor, nil if none was: user data, shown like the Payload.`},
				{Name: "ConcurrencyKey", Doc: `ConcurrencyKey is the job's Concurrency Key, chosen at enqueue; "" if
it has none.`},
			},
			Drop: map[string]string{
				"TraceContext": "the enqueue's trace context is for the Attempt's own trace: Middleware reads it (AttemptInfo.TraceContext); the Monitor does not show it",
			},
		},
		{
			Name: "Progress", Source: "job.Progress", Func: "progressOf", Pointer: true,
			Doc: `Progress is what a job's handler last reported of how far its Attempt
got (Job.ReportProgress), as the Monitor shows it.`,
			Fields: []Field{
				{Name: "Attempt", Doc: `Attempt is the Attempt that reported it.`},
				{Name: "Fraction", Doc: `Fraction is how much was done, from 0 to 1.`},
				{Name: "Note", Doc: `Note is the report's short text; may be empty.`},
				{Name: "At", Doc: `At is when the store recorded it (the renewal that carried it), on
the store's clock.`},
			},
		},
		{
			Name: "JobCursor", Source: "job.Cursor", Func: "jobCursorOf", Pointer: true,
			Doc: `JobCursor is the one value a resumable job's handler saved of how far it
got (Job.SaveCursor), as the Monitor shows it.`,
			Fields: []Field{
				{Name: "Attempt", Doc: `Attempt is the Attempt that saved it.`},
				{Name: "Value", Doc: `Value is the saved Cursor, encoded as JSON.`},
				{Name: "At", Doc: `At is when the store recorded it (the renewal or outcome that
carried it), on the store's clock.`},
			},
		},
		{
			Name: "AttemptInfo", Source: "job.Job", Func: "infoOf",
			Doc: `AttemptInfo describes the Attempt a Middleware wraps. Attempt and
AttemptCeiling mean what they mean on Job.`,
			Fields: []Field{
				{Name: "ID"},
				{Name: "WireName"},
				{Name: "Queue"},
				{Name: "Attempt"},
				{Name: "AttemptCeiling", Expr: "s.Ceiling()", Type: "int", Uses: []string{"AttemptBase", "MaxAttempts"}},
				{Name: "ConcurrencyKey", Doc: `ConcurrencyKey is the job's Concurrency Key; "" if it has none.`},
				{Name: "TraceContext", Doc: `TraceContext is the trace context stored with the job when it was
enqueued (EnqueueJob.TraceContext); nil if none. Read it, do not
change it: it is the job's own.`},
			},
			Drop: map[string]string{
				"Payload":         "decoded into the handler's Job[T].Args, after the middleware chain decides to run it",
				"State":           "always Running while an Attempt runs",
				"ScheduledAt":     "the Monitor's (Client.JobGet), not the Attempt's",
				"CreatedAt":       "the Monitor's (Client.JobGet), not the Attempt's",
				"FinalizedAt":     "zero while an Attempt runs",
				"RetryCause":      "the Monitor's (Client.JobGet), not the Attempt's",
				"CancelCause":     "zero while an Attempt runs",
				"TerminalCause":   "zero while an Attempt runs",
				"Worker":          "AttemptEvent.Worker names the Pump running the Attempt",
				"LeaseExpiresAt":  "the Pump renews the Lease; a middleware has nothing to do with it",
				"CancelRequested": "a cancel request reaches the handler as the cancel of its context",
				"Tags":            "the Monitor's (Client.JobGet); a handler adds Tags through its Job",
				"Progress":        "the handler reports progress (Job.ReportProgress); it does not read it back",
				"Cursor":          "the handler reads it through its Job (Job.Cursor), never a middleware",
				"Snoozes":         "the Monitor's (Client.JobGet); the Driver holds it to the snooze cap",
			},
		},
		{
			Name: "Transition", Source: "store.Transition", Func: "transitionOf",
			Doc: `Transition is one entry of a job's Transition Log: at At, by Via, the job
moved from From to State, its Attempt then being Attempt. The log is
append-only, written by the store with the state change it records, and
bounded per job; how much is kept is the store's Job History Policy.`,
			Fields: []Field{
				{Name: "At"},
				{Name: "From", Doc: `From is StateUnknown for the insert entry.`},
				{Name: "State"},
				{Name: "Via"},
				{Name: "Attempt"},
				{Name: "FailureDetail", Doc: `FailureDetail is the bounded diagnostic text a failed Attempt (or an
unroutable job's quarantine) carried; empty otherwise, and under a
Job History Policy without detail.`},
				{Name: "Seq", Doc: `Seq is the entry's Transition Log sequence number: the key a
Transition Observer sees (ObservedTransition.Seq) and dedupes on, so
a log read here and a notification can be matched.`},
			},
		},
		{
			Name: "JobFilter", Source: "store.JobFilter", Func: "store", Reverse: true,
			Doc: `JobFilter selects jobs for Admin.Jobs and Admin.TagFacet. Every set field
must match.`,
			Fields: []Field{
				{Name: "States", Doc: `States, if non-empty, keeps jobs in any of them.`},
				{Name: "Queue", Doc: `Queue, if set, keeps jobs of that Queue.`},
				{Name: "WireName", Doc: `WireName, if set, keeps jobs of that Wire Name.`},
				{Name: "Tags", Doc: `Tags, if non-empty, keeps jobs carrying every one of them, matched
exactly: key, value and casing (Tag Suggest helps compose them).`},
				{Name: "Retrying", Doc: `Retrying keeps only the Retrying view: Scheduled jobs carrying a
Retry Cause.`},
				{Name: "CreatedFrom", Doc: `CreatedFrom, if non-zero, keeps jobs created at or after it.`},
				{Name: "CreatedTo", Doc: `CreatedTo, if non-zero, keeps jobs created before it.`},
			},
		},
		{
			Name: "QueueInfo", Source: "store.QueueInfo", Func: "queueInfoOf",
			Doc: `QueueInfo is one Queue as the Monitor shows it: its settings and how many
of its jobs are Running.`,
			Fields: []Field{
				{Name: "Name"},
				{Name: "Paused"},
				{Name: "Limit", Doc: `Limit is the cluster-wide Concurrency Limit; 0 when there is none.`},
				{Name: "Running", Doc: `Running is the number of Running jobs: the slots in use.`},
				{Name: "Rate", Doc: `Rate is the cluster-wide Rate Limit; the zero QueueRate when there is
none.`},
				{Name: "RateStarted", Doc: `RateStarted is how many jobs started in the Rate's current window
(the one holding the store's now): Rate.Limit less it is what the
window still allows. 0 without a Rate.`},
				{Name: "Keys", Doc: `Keys is the Queue's policy over Concurrency Keys (Key Limit, Key Rate,
Fair Claim); the zero KeyPolicy when none is set.`},
			},
		},
		{
			Name: "QueueStateCount", Source: "store.QueueStateCount", Func: "queueStateCountOf",
			Doc: `QueueStateCount is the number of jobs of one Queue in one state.`,
			Fields: []Field{
				{Name: "Queue"},
				{Name: "State"},
				{Name: "Count"},
			},
		},
		{
			Name: "TagCount", Source: "store.TagCount", Func: "tagCountOf",
			Doc: `TagCount is one bucket of a Tag Facet: a Tag and how many jobs of the
filtered slice carry it.`,
			Fields: []Field{
				{Name: "Tag"},
				{Name: "Count"},
			},
		},
		{
			Name: "DependencyInfo", Source: "store.DependencyInfo", Func: "dependencyInfoOf",
			Doc: `DependencyInfo is a job's place in the Dependency graph: the parents that
gate it and the jobs it gates.`,
			Fields: []Field{
				{Name: "Mode", Doc: `Mode is how the job reacts to its parents; meaningful when it has
parents.`},
				{Name: "Parents", Doc: `Parents lists the job's parents in ascending id order.`},
				{Name: "Pending", Expr: "s.Pending()", Type: "int", Uses: []string{"Parents"},
					Doc: `Pending is how many parents the job's latch has not counted yet:
zero once the job was released or cancelled by its parents. A job an
operator cancelled while it waited keeps the count it had.`},
				{Name: "Dependents", Doc: `Dependents lists the jobs that name this one as a parent, ascending.`},
			},
		},
		{
			Name: "ParentEdge", Source: "store.ParentEdge", Func: "parentEdgeOf",
			Doc: `ParentEdge is one Dependency parent of a job.`,
			Fields: []Field{
				{Name: "ID"},
				{Name: "State", Doc: `State is the parent's state now.`},
				{Name: "Counted", Doc: `Counted says the dependent's latch has counted this parent: it
reached a terminal state. It stays true if an operator later
requeues the parent.`},
			},
		},
		{
			Name: "AncestorOutput", Source: "store.AncestorOutput", Func: "ancestorOutputOf",
			Doc: `AncestorOutput is what a job reads of one of its Dependency ancestors:
the ancestor's state now, and its Job Output if its success stored one.
Absence is a normal result: the ancestor failed, was cancelled, or
succeeded without output.`,
			Fields: []Field{
				{Name: "State", Doc: `State is the ancestor's state now.`},
				{Name: "Output", Doc: `Output is the ancestor's Job Output; nil when absent.`},
				{Name: "Present", Doc: `Present is true when the ancestor's success stored an output (an
empty one included).`},
			},
		},
		{
			Name: "AuditEntry", Source: "store.AuditEntry", Func: "auditEntryOf",
			Doc: `AuditEntry is one record of the audit trail: who did what, when, to which
job, Queue or schedule. The audit trail is not the Transition Log: it
records Operator Actions, including those that change no state
(Reschedule, the Queue actions).`,
			Fields: []Field{
				{Name: "ID", Doc: `ID orders the trail; it is the entry's Cursor.`},
				{Name: "At"},
				{Name: "Actor"},
				{Name: "Action"},
				{Name: "JobID", Doc: `JobID is the job acted on; 0 for a Queue or schedule action.`},
				{Name: "Queue", Doc: `Queue is the job's Queue, or the Queue acted on.`},
				{Name: "Detail", Doc: `Detail says what changed, e.g. "limit 5", the new due time, or the
schedule's name.`},
			},
		},
		{
			Name: "Occurrence", Source: "store.Occurrence", Func: "occurrenceOf",
			Doc: `Occurrence is one occurrence record of a Recurring Schedule: a job
minted, the one make-up job of a missed span, an occurrence skipped (with
its reason), or an operator's trigger.`,
			Fields: []Field{
				{Name: "Seq", Doc: `Seq orders the records of one store, a later record having a larger
Seq; it is the record's Cursor.`},
				{Name: "Schedule"},
				{Name: "Kind"},
				{Name: "At", Doc: `At is the occurrence instant (the last of a span; the trigger's time
for OccurrenceTriggered), and First the span's first occurrence
(equal to At for one occurrence).`},
				{Name: "First"},
				{Name: "Reason", Doc: `Reason says why an OccurrenceSkipped made no job.`},
				{Name: "Job", Doc: `Job is the job made; 0 for a skip.`},
				{Name: "Actor", Doc: `Actor is who triggered an OccurrenceTriggered.`},
				{Name: "RecordedAt"},
			},
		},
		{
			Name: "WorkflowInfo", Source: "store.WorkflowInfo", Func: "workflowInfoOf",
			Doc: `WorkflowInfo is a Workflow as the Monitor shows it: its row and the
status its members' states project.`,
			Fields: []Field{
				{Name: "ID"},
				{Name: "Name"},
				{Name: "Status", Expr: "WorkflowStatus(s.Status())", Type: "WorkflowStatus", Uses: []string{"Counts"}},
				{Name: "CreatedAt", Doc: `CreatedAt is when the Workflow was created, on the store's clock.`},
				{Name: "Members", Expr: "s.Members()", Type: "int", Uses: []string{"Counts"},
					Doc: `Members is the member count.`},
				{Name: "Counts", Doc: `Counts are the members by state; a state without members is absent.`},
				{Name: "RestartOf", Doc: `RestartOf is the Workflow this one is the Workflow Restart of; zero
unless Admin.RestartWorkflow created it.`},
			},
		},
		{
			Name: "WorkflowMember", Source: "store.WorkflowMember", Func: "workflowMemberOf",
			Doc: `WorkflowMember is one member of a Workflow with its Dependency edges.`,
			Fields: []Field{
				{Name: "Job"},
				{Name: "Parents", Doc: `Parents are the member's Dependency parents, ascending; every one is
a member of the same Workflow.`},
				{Name: "Mode", Doc: `Mode is the member's Dependency mode; meaningful when it has parents.`},
			},
		},
		{
			Name: "PumpStats", Source: "shell.Stats", Func: "pumpStatsOf",
			Doc: `PumpStats is one Pump of a Stats snapshot. Each field is current, but two
fields may be a step of the Pump apart.`,
			Fields: []Field{
				{Name: "Worker", Doc: `Worker is the Pump's lease-holder identity.`},
				{Name: "PoolSize", Doc: `PoolSize is the Pump's Worker count.`},
				{Name: "Executing", Doc: `Executing is how many Attempts are running (those past their attempt
timeout and grace included).`},
				{Name: "BufferedOutcomes", Doc: `BufferedOutcomes is how many finished Attempts still hold their
Worker because their outcome is buffered or in flight to the store.`},
				{Name: "Free", Doc: `Free is the capacity the Pump would claim up to now: PoolSize less
the Workers held and the slots of a claim in flight. Zero means
Backpressure.`},
				{Name: "Claimed, Reported", Doc: `Claimed and Reported count the jobs claimed and the outcomes the
store applied since the Pump started.`},
				{Name: "ClaimsPerSecond, OutcomesPerSecond", Doc: `ClaimsPerSecond and OutcomesPerSecond are the jobs claimed and the
outcomes applied per second over the last StatsRateWindow (or since
the Pump started, when that is shorter), on the Client's clock.`},
				{Name: "LastStoreError", Doc: `LastStoreError is the most recent failed store call, nil if none.`},
				{Name: "Stopping", Doc: `Stopping is set once the Pump's graceful stop began.`},
			},
		},
		{
			Name: "StoreError", Source: "shell.StoreError", Func: "storeErrorOf", Pointer: true,
			Doc: `StoreError is a failed store call of a Pump.`,
			Fields: []Field{
				{Name: "Operation", Doc: `Operation names the call, as StoreCallEvent.Operation does.`},
				{Name: "Err", Doc: `Err is the call's error.`},
				{Name: "At", Doc: `At is when it failed, on the Client's clock.`},
			},
		},
		{
			Name: "QueueStats", Source: "store.QueueInfo", Func: "queueStatsOf",
			Doc: `QueueStats is one Queue of a Stats snapshot, as the store counts it
across the cluster.`,
			Fields: []Field{
				{Name: "Name"},
				{Name: "Paused"},
				{Name: "Running", Doc: `Running is how many of the Queue's jobs are Running: the slots of its
Concurrency Limit in use.`},
				{Name: "Limit", Doc: `Limit is the Queue's Concurrency Limit; 0 when it has none.`},
				{Name: "Rate", Doc: `Rate is the Queue's Rate Limit (the zero QueueRate when it has
none), and RateStarted how many jobs started in its current window.`},
				{Name: "RateStarted"},
				{Name: "Keys", Doc: `Keys is the Queue's policy over Concurrency Keys.`},
			},
		},
	}
}
