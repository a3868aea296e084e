package mcp

import (
	"context"
	"time"

	"github.com/backwave/backwave"
)

// catalogue is every tool, reads first: each wraps one Admin method.
func catalogue() ([]toolDef, error) {
	b := &builder{}
	addReads(b)
	addWorkflowReads(b)
	addKeyReads(b)
	addNodeReads(b)
	addWrites(b)
	addWorkflowWrites(b)
	addKeyWrites(b)
	addQueueRemove(b)
	addBulkWrites(b)
	return b.tools, b.err
}

// The inputs of the read tools.

type jobRef struct {
	ID jobID `json:"id" jsonschema:"the job's id, as job_list shows it"`
}

type filterInput struct {
	States      []stateName `json:"states,omitempty" jsonschema:"keep jobs in any of these states; all states if absent"`
	Queue       string      `json:"queue,omitempty" jsonschema:"keep jobs of this Queue"`
	WireName    string      `json:"wire_name,omitempty" jsonschema:"keep jobs of this Wire Name (job type)"`
	Tags        []tagValue  `json:"tags,omitempty" jsonschema:"keep jobs carrying every one of these Tags, matched exactly (key, value and casing); tag_suggest finds them"`
	Retrying    bool        `json:"retrying,omitempty" jsonschema:"keep only the Retrying view: Scheduled jobs that carry a Retry Cause"`
	CreatedFrom time.Time   `json:"created_from,omitzero" jsonschema:"keep jobs created at or after this instant (RFC 3339)"`
	CreatedTo   time.Time   `json:"created_to,omitzero" jsonschema:"keep jobs created before this instant (RFC 3339)"`
}

func (f filterInput) filter() (backwave.JobFilter, error) {
	states, err := parseStates(f.States)
	if err != nil {
		return backwave.JobFilter{}, err
	}
	return backwave.JobFilter{
		States:      states,
		Queue:       f.Queue,
		WireName:    f.WireName,
		Tags:        tagsOf(f.Tags),
		Retrying:    f.Retrying,
		CreatedFrom: f.CreatedFrom,
		CreatedTo:   f.CreatedTo,
	}, nil
}

type pageInput struct {
	Before cursor    `json:"before,omitempty" jsonschema:"the next of the previous page, to read the page after it; absent for the newest page"`
	Limit  pageLimit `json:"limit,omitempty" jsonschema:"the page size (100 if absent)"`
}

func (p pageInput) params() backwave.PageParams {
	return backwave.PageParams{Before: backwave.Cursor(p.Before), Limit: int(p.Limit)}
}

type jobListInput struct {
	filterInput
	pageInput
}

type retryingInput struct {
	Queue string `json:"queue,omitempty" jsonschema:"keep jobs of this Queue; every Queue if absent"`
	pageInput
}

type facetInput struct {
	filterInput
	Limit topLimit `json:"limit,omitempty" jsonschema:"how many of the top Tags to return (10 if absent)"`
}

type suggestInput struct {
	Prefix string   `json:"prefix" jsonschema:"the start of a Tag's display form (a Label, or key=value), matched case-insensitively; empty lists the first Tags"`
	Limit  topLimit `json:"limit,omitempty" jsonschema:"how many Tags to return (20 if absent)"`
}

type queueInput struct {
	Queue string `json:"queue,omitempty" jsonschema:"count the jobs of this Queue only; every Queue if absent"`
}

type noInput struct{}

type occurrencesInput struct {
	Name  string     `json:"name" jsonschema:"the Recurring Schedule's name, as schedule_list shows it"`
	Kinds []kindName `json:"kinds,omitempty" jsonschema:"keep records of these kinds; every kind if absent"`
	pageInput
}

type auditInput struct {
	JobID jobID  `json:"job_id,omitempty" jsonschema:"keep the entries about this job"`
	Queue string `json:"queue,omitempty" jsonschema:"keep the entries about this Queue: its jobs' and its own"`
	pageInput
}

// The results of the read tools.

type jobGetResult struct {
	Job         jobView     `json:"job"`
	Output      *blob       `json:"output,omitempty" jsonschema:"the Job Output a successful Attempt stored; absent if none, and for a caller without ViewSensitiveData"`
	Transitions int         `json:"transitions" jsonschema:"how many Transition Log entries the job has; job_transitions lists them"`
	Rewrites    []auditView `json:"rewrites,omitempty" jsonschema:"the job's unique-key rewrites (Replace and Debounce: a later enqueue of its key gave it new args, Tags or due time), oldest first, from the audit trail; absent if none"`
	Withheld    []string    `json:"withheld,omitempty" jsonschema:"the sensitive fields left out of this result because the caller does not hold the ViewSensitiveData permission; absent when nothing was withheld"`
}

type transitionView struct {
	At            time.Time `json:"at"`
	From          fromName  `json:"from" jsonschema:"the state before; unknown for the insert entry"`
	State         stateName `json:"state" jsonschema:"the state after"`
	Via           string    `json:"via" jsonschema:"what moved the job, e.g. claim, retry, dead_letter, requeue"`
	Attempt       int32     `json:"attempt" jsonschema:"the job's Attempt number then"`
	FailureDetail string    `json:"failure_detail,omitempty" jsonschema:"the diagnostic text a failed Attempt or a quarantine carried; only for a caller holding ViewSensitiveData"`
}

type transitionsResult struct {
	JobID       jobID            `json:"job_id"`
	Transitions []transitionView `json:"transitions" jsonschema:"the Transition Log, oldest entry first"`
	Withheld    []string         `json:"withheld,omitempty" jsonschema:"the sensitive fields left out of this result because the caller does not hold the ViewSensitiveData permission; absent when nothing was withheld"`
}

type jobPage struct {
	Jobs     []jobView `json:"jobs" jsonschema:"the jobs, newest first"`
	Next     cursor    `json:"next,omitempty" jsonschema:"pass as before to read the next page; absent on the last page"`
	Withheld []string  `json:"withheld,omitempty" jsonschema:"the sensitive fields left out of this result because the caller does not hold the ViewSensitiveData permission; absent when nothing was withheld"`
}

type parentView struct {
	ID      jobID     `json:"id"`
	State   stateName `json:"state" jsonschema:"the parent's state now"`
	Counted bool      `json:"counted" jsonschema:"the dependent's latch has counted this parent (it reached a terminal state)"`
}

type dependenciesResult struct {
	JobID      jobID        `json:"job_id"`
	Mode       string       `json:"mode" jsonschema:"how the job reacts to its parents: on_success or on_any_terminal; meaningful when it has parents"`
	Parents    []parentView `json:"parents" jsonschema:"the job's Dependency parents, ascending by id"`
	Pending    int          `json:"pending" jsonschema:"how many parents the job's latch has not counted yet"`
	Dependents []jobID      `json:"dependents" jsonschema:"the jobs that name this one as a parent, ascending"`
}

type tagCountView struct {
	Key   string `json:"key,omitempty" jsonschema:"the key of a Keyed Tag; absent for a Label"`
	Value string `json:"value"`
	Count int    `json:"count" jsonschema:"how many jobs of the slice carry the Tag"`
}

type facetResult struct {
	Tags []tagCountView `json:"tags" jsonschema:"the Tags the filtered jobs carry, highest count first"`
}

type suggestResult struct {
	Tags []tagValue `json:"tags" jsonschema:"stored Tags whose display form starts with the prefix, in lexicographic order; use them as given in a filter"`
}

type countByStateResult struct {
	Queue  string         `json:"queue,omitempty" jsonschema:"the Queue counted; absent when every Queue was"`
	Counts map[string]int `json:"counts" jsonschema:"jobs per state name, every state present"`
	Total  int            `json:"total" jsonschema:"jobs in all states"`
	Ready  int            `json:"ready" jsonschema:"of the scheduled jobs, those due now: the backlog"`
	Later  int            `json:"later" jsonschema:"of the scheduled jobs, those due in the future"`
	// ReadyAtLeast says ready is a lower bound (QueueBacklog.ReadyAtLeast).
	ReadyAtLeast bool `json:"ready_at_least,omitempty" jsonschema:"ready is a lower bound: a Queue holds at least 100,000 jobs both ready and later, and counts stop there"`
}

type queueStateCount struct {
	Queue string    `json:"queue"`
	State stateName `json:"state"`
	Count int       `json:"count"`
}

type countByQueueResult struct {
	Counts []queueStateCount `json:"counts" jsonschema:"jobs per Queue and state, ordered by Queue then state; zero counts are absent"`
}

type queueView struct {
	Name    string `json:"name"`
	Paused  bool   `json:"paused" jsonschema:"claims from the Queue are stopped"`
	Limit   int    `json:"limit" jsonschema:"the cluster-wide Concurrency Limit; 0 when there is none"`
	Running int    `json:"running" jsonschema:"how many of its jobs are Running"`
	Ready   int    `json:"ready" jsonschema:"Scheduled jobs due now: the backlog"`
	Later   int    `json:"later" jsonschema:"Scheduled jobs due in the future"`
	// ReadyAtLeast says ready is a lower bound (QueueBacklog.ReadyAtLeast).
	ReadyAtLeast bool `json:"ready_at_least,omitempty" jsonschema:"ready is a lower bound: the Queue holds at least 100,000 jobs both ready and later, and counts stop there"`
	// OldestReadyAge is the Queue's latency in seconds.
	OldestReadyAge float64 `json:"oldest_ready_age_seconds" jsonschema:"how long the oldest ready job has been due, in seconds; 0 when none is ready"`
	KeyPolicy      string  `json:"key_policy" jsonschema:"the Queue's Key Limit, Key Rate and Fair Claim, e.g. key limit 2, fair; none when unset"`
}

type queuesResult struct {
	Queues []queueView `json:"queues" jsonschema:"every known Queue, ordered by name"`
}

type scheduleView struct {
	Name         string    `json:"name"`
	Cron         string    `json:"cron" jsonschema:"the cron expression"`
	Zone         string    `json:"zone,omitempty" jsonschema:"the IANA zone the expression is read in; absent for UTC"`
	WireName     string    `json:"wire_name" jsonschema:"the Wire Name of the jobs it mints"`
	Queue        string    `json:"queue" jsonschema:"the Queue of the jobs it mints"`
	CatchUp      string    `json:"catch_up" jsonschema:"what it does about occurrences missed while no node minted: skip or coalesce"`
	NoOverlap    bool      `json:"no_overlap" jsonschema:"it skips an occurrence while its previous job is still live"`
	Paused       bool      `json:"paused"`
	Last         time.Time `json:"last,omitzero" jsonschema:"the last occurrence it dealt with; absent if none since it was registered, resumed or changed"`
	Next         time.Time `json:"next,omitzero" jsonschema:"the next occurrence it will mint; one well in the past means no worker node is minting. Absent if there is none"`
	LastJob      jobID     `json:"last_job,omitempty" jsonschema:"the latest job it minted or an operator triggered"`
	InstanceLive bool      `json:"instance_live" jsonschema:"last_job is not terminal yet"`
	Revision     int64     `json:"revision"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

type schedulesResult struct {
	Schedules []scheduleView `json:"schedules" jsonschema:"every Recurring Schedule, ordered by name"`
}

type occurrenceView struct {
	Seq        int64     `json:"seq" jsonschema:"orders the records; the record's cursor"`
	Kind       kindName  `json:"kind" jsonschema:"what became of the occurrence"`
	At         time.Time `json:"at" jsonschema:"the occurrence instant (the last of a span; the trigger's time for triggered)"`
	First      time.Time `json:"first" jsonschema:"the first occurrence of a span; equal to at for one occurrence"`
	Reason     string    `json:"reason,omitempty" jsonschema:"why a skipped occurrence made no job: overlap or missed"`
	JobID      jobID     `json:"job_id,omitempty" jsonschema:"the job made; absent for a skip"`
	Actor      string    `json:"actor,omitempty" jsonschema:"who triggered a triggered occurrence"`
	RecordedAt time.Time `json:"recorded_at"`
}

type occurrencesResult struct {
	Schedule    string           `json:"schedule"`
	Occurrences []occurrenceView `json:"occurrences" jsonschema:"the occurrence records, newest first"`
	Next        cursor           `json:"next,omitempty" jsonschema:"pass as before to read the next page; absent on the last page"`
}

type auditView struct {
	ID     int64     `json:"id" jsonschema:"orders the trail; the entry's cursor"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor" jsonschema:"who took the action"`
	Action string    `json:"action" jsonschema:"the Operator Action, e.g. requeue, cancel, queue_pause"`
	JobID  jobID     `json:"job_id,omitempty" jsonschema:"the job acted on; absent for a Queue or schedule action"`
	Queue  string    `json:"queue,omitempty" jsonschema:"the job's Queue, or the Queue acted on"`
	Detail string    `json:"detail,omitempty" jsonschema:"what changed, e.g. limit 5, the new due time, or the schedule's name"`
}

func auditViewOf(e backwave.AuditEntry) auditView {
	return auditView{ID: e.ID, At: e.At, Actor: string(e.Actor), Action: e.Action.String(), JobID: jobID(e.JobID), Queue: e.Queue, Detail: e.Detail}
}

type auditResult struct {
	Entries []auditView `json:"entries" jsonschema:"the audit trail, newest first"`
	Next    cursor      `json:"next,omitempty" jsonschema:"pass as before to read the next page; absent on the last page"`
}

func addReads(b *builder) {
	addRead(b, "job_get", "Get a job",
		"One job: its row, its Job Output and the size of its Transition Log. Payload and Job Output need the ViewSensitiveData permission.",
		func(ctx context.Context, r reading, in jobRef) (jobGetResult, error) {
			d, err := r.admin.Job(ctx, backwave.JobID(in.ID))
			if err != nil {
				return jobGetResult{}, err
			}
			out := jobGetResult{Job: jobViewOf(d.Job, r.sensitive), Transitions: len(d.Transitions), Withheld: withheld(r.sensitive, fieldPayload, fieldOutput, fieldCursor)}
			if r.sensitive && d.Output != nil {
				out.Output = blobOf(d.Output)
			}
			for _, e := range d.Rewrites {
				out.Rewrites = append(out.Rewrites, auditViewOf(e))
			}
			return out, nil
		})
	addRead(b, "job_transitions", "Get a job's Transition Log",
		"One job's Transition Log, oldest entry first: every state change with its time, cause and Attempt. Failure Detail needs the ViewSensitiveData permission.",
		func(ctx context.Context, r reading, in jobRef) (transitionsResult, error) {
			d, err := r.admin.Job(ctx, backwave.JobID(in.ID))
			if err != nil {
				return transitionsResult{}, err
			}
			out := transitionsResult{JobID: in.ID, Transitions: make([]transitionView, len(d.Transitions)), Withheld: withheld(r.sensitive, fieldFailureDetail)}
			for i, t := range d.Transitions {
				v := transitionView{At: t.At, From: fromName(t.From.String()), State: stateName(t.State.String()), Via: t.Via.String(), Attempt: int32(t.Attempt)}
				if r.sensitive {
					v.FailureDetail = t.FailureDetail
				}
				out.Transitions[i] = v
			}
			return out, nil
		})
	addRead(b, "job_list", "List jobs",
		"Jobs the filter keeps, newest first, one page at a time. Every filter field is optional and all given ones must match. Payloads need the ViewSensitiveData permission.",
		func(ctx context.Context, r reading, in jobListInput) (jobPage, error) {
			f, err := in.filter()
			if err != nil {
				return jobPage{}, err
			}
			p, err := r.admin.Jobs(ctx, backwave.JobListParams{JobFilter: f, PageParams: in.params()})
			if err != nil {
				return jobPage{}, err
			}
			return jobPage{Jobs: jobViews(p.Items, r.sensitive), Next: cursor(p.Next), Withheld: withheld(r.sensitive, fieldPayload)}, nil
		})
	addRead(b, "job_retrying", "List retrying jobs",
		"The Retrying view: Scheduled jobs that went back to Scheduled because an Attempt went wrong, newest first, one page at a time.",
		func(ctx context.Context, r reading, in retryingInput) (jobPage, error) {
			p, err := r.admin.Retrying(ctx, in.Queue, in.params())
			if err != nil {
				return jobPage{}, err
			}
			return jobPage{Jobs: jobViews(p.Items, r.sensitive), Next: cursor(p.Next), Withheld: withheld(r.sensitive, fieldPayload)}, nil
		})
	addRead(b, "job_dependencies", "Get a job's Dependencies",
		"A job's place in the Dependency graph: its mode, its parents (with whether its latch counted each) and the jobs that depend on it.",
		func(ctx context.Context, r reading, in jobRef) (dependenciesResult, error) {
			d, err := r.admin.Dependencies(ctx, backwave.JobID(in.ID))
			if err != nil {
				return dependenciesResult{}, err
			}
			out := dependenciesResult{JobID: in.ID, Mode: d.Mode.String(), Pending: d.Pending, Parents: make([]parentView, len(d.Parents)), Dependents: make([]jobID, len(d.Dependents))}
			for i, p := range d.Parents {
				out.Parents[i] = parentView{ID: jobID(p.ID), State: stateName(p.State.String()), Counted: p.Counted}
			}
			for i, id := range d.Dependents {
				out.Dependents[i] = jobID(id)
			}
			return out, nil
		})
	addRead(b, "tag_facet", "Tag Facet of a slice of jobs",
		"The Tags the jobs the filter keeps carry, with how many jobs carry each, highest count first: the dominant buckets of a slice. To find any stored Tag, use tag_suggest.",
		func(ctx context.Context, r reading, in facetInput) (facetResult, error) {
			f, err := in.filter()
			if err != nil {
				return facetResult{}, err
			}
			tcs, err := r.admin.TagFacet(ctx, f, int(in.Limit))
			if err != nil {
				return facetResult{}, err
			}
			out := facetResult{Tags: make([]tagCountView, len(tcs))}
			for i, tc := range tcs {
				out.Tags[i] = tagCountView{Key: tc.Tag.Key, Value: tc.Tag.Value, Count: tc.Count}
			}
			return out, nil
		})
	addRead(b, "tag_suggest", "Suggest Tags",
		"Completes a prefix over every Tag in the store, to compose a filter: each Tag comes in its stored casing, so a filter built from it matches exactly.",
		func(ctx context.Context, r reading, in suggestInput) (suggestResult, error) {
			tags, err := r.admin.TagSuggest(ctx, in.Prefix, int(in.Limit))
			if err != nil {
				return suggestResult{}, err
			}
			return suggestResult{Tags: tagValues(tags)}, nil
		})
	addRead(b, "count_by_state", "Count jobs by state",
		"How many jobs are in each state, in one Queue or in all of them, and how many of the scheduled ones are ready (due now) and later.",
		func(ctx context.Context, r reading, in queueInput) (countByStateResult, error) {
			m, err := r.admin.CountByState(ctx, in.Queue)
			if err != nil {
				return countByStateResult{}, err
			}
			out := countByStateResult{Queue: in.Queue, Counts: map[string]int{}}
			for _, s := range backwave.JobStates() {
				out.Counts[s.String()] = m[s]
				out.Total += m[s]
			}
			bs, err := r.admin.Backlog(ctx)
			if err != nil {
				return countByStateResult{}, err
			}
			for _, b := range bs {
				if in.Queue == "" || b.Queue == in.Queue {
					out.Ready += b.Ready
					out.Later += b.Later
					out.ReadyAtLeast = out.ReadyAtLeast || b.ReadyAtLeast
				}
			}
			return out, nil
		})
	addRead(b, "count_by_queue", "Count jobs by Queue",
		"How many jobs every Queue holds in each state.",
		func(ctx context.Context, r reading, _ noInput) (countByQueueResult, error) {
			qs, err := r.admin.CountByQueue(ctx)
			if err != nil {
				return countByQueueResult{}, err
			}
			out := countByQueueResult{Counts: make([]queueStateCount, len(qs))}
			for i, q := range qs {
				out.Counts[i] = queueStateCount{Queue: q.Queue, State: stateName(q.State.String()), Count: q.Count}
			}
			return out, nil
		})
	addRead(b, "queue_list", "List Queues",
		"Every known Queue with whether it is paused, its Concurrency Limit, how many of its jobs are Running, how many Scheduled jobs are ready (due now) and later, and the age of the oldest ready job.",
		func(ctx context.Context, r reading, _ noInput) (queuesResult, error) {
			qs, err := r.admin.Queues(ctx)
			if err != nil {
				return queuesResult{}, err
			}
			bs, err := r.admin.Backlog(ctx)
			if err != nil {
				return queuesResult{}, err
			}
			backlog := make(map[string]backwave.QueueBacklog, len(bs))
			for _, b := range bs {
				backlog[b.Queue] = b
			}
			now := time.Now()
			out := queuesResult{Queues: make([]queueView, len(qs))}
			for i, q := range qs {
				b := backlog[q.Name]
				out.Queues[i] = queueView{Name: q.Name, Paused: q.Paused, Limit: q.Limit, Running: q.Running,
					Ready: b.Ready, Later: b.Later, ReadyAtLeast: b.ReadyAtLeast, OldestReadyAge: b.Age(now).Seconds(), KeyPolicy: q.Keys.String()}
			}
			return out, nil
		})
	addRead(b, "schedule_list", "List Recurring Schedules",
		"Every Recurring Schedule with its cron expression, zone, template, whether it is paused, and its last and next occurrence.",
		func(ctx context.Context, r reading, _ noInput) (schedulesResult, error) {
			ss, err := r.admin.Schedules(ctx)
			if err != nil {
				return schedulesResult{}, err
			}
			out := schedulesResult{Schedules: make([]scheduleView, len(ss))}
			for i, s := range ss {
				out.Schedules[i] = scheduleView{
					Name: s.Name, Cron: s.Cron, Zone: s.Zone, WireName: s.WireName, Queue: s.Queue,
					CatchUp: s.CatchUp.String(), NoOverlap: s.NoOverlap, Paused: s.Paused,
					Last: s.Last, Next: s.Next, LastJob: jobID(s.LastJob), InstanceLive: s.InstanceLive,
					Revision: s.Revision, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
				}
			}
			return out, nil
		})
	addRead(b, "schedule_occurrences", "List a schedule's occurrences",
		"What became of each occurrence of one Recurring Schedule — minted, made up, skipped (with the reason) or triggered by an operator — newest first, one page at a time.",
		func(ctx context.Context, r reading, in occurrencesInput) (occurrencesResult, error) {
			kinds, err := parseKinds(in.Kinds)
			if err != nil {
				return occurrencesResult{}, err
			}
			p, err := r.admin.ScheduleOccurrences(ctx, in.Name, backwave.OccurrenceListParams{Kinds: kinds, PageParams: in.params()})
			if err != nil {
				return occurrencesResult{}, err
			}
			out := occurrencesResult{Schedule: in.Name, Occurrences: make([]occurrenceView, len(p.Items)), Next: cursor(p.Next)}
			for i, o := range p.Items {
				v := occurrenceView{Seq: o.Seq, Kind: kindName(o.Kind.String()), At: o.At, First: o.First, JobID: jobID(o.Job), Actor: string(o.Actor), RecordedAt: o.RecordedAt}
				if o.Kind == backwave.OccurrenceSkipped {
					v.Reason = o.Reason.String()
				}
				out.Occurrences[i] = v
			}
			return out, nil
		})
	addRead(b, "audit_list", "List the audit trail",
		"The audit trail of Operator Actions — who did what, when, to which job, Queue or schedule — newest first, one page at a time.",
		func(ctx context.Context, r reading, in auditInput) (auditResult, error) {
			p, err := r.admin.Audit(ctx, backwave.AuditListParams{JobID: backwave.JobID(in.JobID), Queue: in.Queue, PageParams: in.params()})
			if err != nil {
				return auditResult{}, err
			}
			out := auditResult{Entries: make([]auditView, len(p.Items)), Next: cursor(p.Next)}
			for i, e := range p.Items {
				out.Entries[i] = auditViewOf(e)
			}
			return out, nil
		})
}
