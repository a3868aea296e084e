package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// The inputs of the write tools.

type rescheduleInput struct {
	ID jobID     `json:"id" jsonschema:"the id of a waiting (scheduled or awaiting_parent) job"`
	At time.Time `json:"at" jsonschema:"the new due time (RFC 3339, e.g. 2026-12-01T09:00:00Z)"`
}

type enqueueInput struct {
	WireName    nonEmpty       `json:"wire_name" jsonschema:"the Wire Name of the handler that will run the job, as job_list shows it"`
	Queue       string         `json:"queue,omitempty" jsonschema:"the Queue to enqueue on; default if absent"`
	Payload     map[string]any `json:"payload,omitempty" jsonschema:"the job's arguments as its handler's args type decodes them: a JSON object; {} if absent"`
	RunAt       *time.Time     `json:"run_at,omitempty" jsonschema:"the due time (RFC 3339); now if absent"`
	MaxAttempts int            `json:"max_attempts,omitempty" jsonschema:"how many Attempts the job gets before a failing one dead-letters it; 25 if absent"`
}

type scheduleRef struct {
	Name nonEmpty `json:"name" jsonschema:"the Recurring Schedule's name, as schedule_list shows it"`
}

type queueRef struct {
	Queue nonEmpty `json:"queue" jsonschema:"the Queue's name, as queue_list shows it"`
}

type queueLimitInput struct {
	Queue nonEmpty    `json:"queue" jsonschema:"the Queue's name, as queue_list shows it"`
	Limit nonNegative `json:"limit" jsonschema:"the cluster-wide Concurrency Limit: at most this many of the Queue's jobs Running at once; 0 removes the limit"`
}

// The results of the write tools.

type jobActionResult struct {
	Job      jobView  `json:"job" jsonschema:"the job as the action left it"`
	Actor    string   `json:"actor" jsonschema:"the Actor the audit trail recorded for this action"`
	Withheld []string `json:"withheld,omitempty" jsonschema:"the sensitive fields left out of this result because the caller does not hold the ViewSensitiveData permission; absent when nothing was withheld"`
}

type triggerResult struct {
	Schedule string `json:"schedule"`
	JobID    jobID  `json:"job_id" jsonschema:"the job the trigger enqueued, due now"`
	Actor    string `json:"actor" jsonschema:"the Actor the audit trail recorded for this action"`
}

type scheduleActionResult struct {
	Schedule string `json:"schedule"`
	Action   string `json:"action" jsonschema:"the Operator Action taken"`
	Actor    string `json:"actor" jsonschema:"the Actor the audit trail recorded for this action"`
}

type queueActionResult struct {
	Queue  string `json:"queue"`
	Action string `json:"action" jsonschema:"the Operator Action taken"`
	Limit  *int   `json:"limit,omitempty" jsonschema:"the Concurrency Limit set (0: none); only for set_queue_limit"`
	Actor  string `json:"actor" jsonschema:"the Actor the audit trail recorded for this action"`
}

func jobAction(a acting, j backwave.JobInfo) jobActionResult {
	return jobActionResult{Job: jobViewOf(j, a.sensitive), Actor: string(a.actor), Withheld: withheld(a.sensitive, fieldPayload)}
}

func addWrites(b *builder) {
	addWrite(b, "job_requeue", "Requeue a job",
		"Moves a dead_lettered or quarantined job back to scheduled, due now, its max attempts counted afresh from its current Attempt; its Retry Cause is cleared. Any other state is refused and nothing changes. Audited; needs the Requeue permission.",
		permission.ActionRequeue, writeHints{},
		func(ctx context.Context, a acting, in jobRef) (jobActionResult, error) {
			j, err := a.admin.Requeue(ctx, backwave.JobID(in.ID))
			if err != nil {
				return jobActionResult{}, err
			}
			return jobAction(a, j), nil
		})
	addWrite(b, "job_cancel", "Cancel a job",
		"Cancels a live job: a waiting one at once; a running one cooperatively (its handler is asked to stop, and the job ends cancelled however that Attempt ends). A terminal job is refused. Audited; needs the Cancel permission.",
		permission.ActionCancel, writeHints{destructive: true},
		func(ctx context.Context, a acting, in jobRef) (jobActionResult, error) {
			j, err := a.admin.Cancel(ctx, backwave.JobID(in.ID))
			if err != nil {
				return jobActionResult{}, err
			}
			return jobAction(a, j), nil
		})
	addWrite(b, "job_reschedule", "Reschedule a job",
		"Moves the due time of a waiting (scheduled or awaiting_parent) job; it keeps its id, payload, Attempt and Retry Cause. A running or terminal job is refused. Audited; needs the Requeue permission.",
		permission.ActionReschedule, writeHints{idempotent: true},
		func(ctx context.Context, a acting, in rescheduleInput) (jobActionResult, error) {
			j, err := a.admin.Reschedule(ctx, backwave.JobID(in.ID), in.At)
			if err != nil {
				return jobActionResult{}, err
			}
			return jobAction(a, j), nil
		})
	addWrite(b, "job_enqueue", "Enqueue a job",
		"Enqueues one job by hand: a Wire Name, a Queue, a JSON object payload, a due time and a max attempts. A Wire Name no handler serves is stored and ends quarantined at its claim. Audited; needs the Enqueue permission.",
		permission.ActionEnqueue, writeHints{},
		func(ctx context.Context, a acting, in enqueueInput) (jobActionResult, error) {
			p := backwave.OperatorEnqueue{WireName: string(in.WireName), Queue: in.Queue, MaxAttempts: in.MaxAttempts}
			if in.Payload != nil {
				b, err := json.Marshal(in.Payload)
				if err != nil {
					return jobActionResult{}, fmt.Errorf("%w: payload: %w", backwave.ErrInvalidParams, err)
				}
				p.Payload = b
			}
			if in.RunAt != nil {
				p.RunAt = *in.RunAt
			}
			j, err := a.admin.Enqueue(ctx, p)
			if err != nil {
				return jobActionResult{}, err
			}
			return jobAction(a, j), nil
		})
	addWrite(b, "schedule_trigger", "Trigger a Recurring Schedule now",
		"Enqueues one job from the schedule's template, due now, and records the trigger as an occurrence. A paused schedule can be triggered; under no_overlap a schedule whose last job is still live refuses. Audited; needs the TriggerSchedule permission.",
		permission.ActionTriggerSchedule, writeHints{},
		func(ctx context.Context, a acting, in scheduleRef) (triggerResult, error) {
			id, err := a.admin.TriggerSchedule(ctx, string(in.Name))
			if err != nil {
				return triggerResult{}, err
			}
			return triggerResult{Schedule: string(in.Name), JobID: jobID(id), Actor: string(a.actor)}, nil
		})
	scheduleAction := func(name, title, description string, action permission.Action, h writeHints, do func(*backwave.Admin, context.Context, string) error) {
		addWrite(b, name, title, description, action, h,
			func(ctx context.Context, a acting, in scheduleRef) (scheduleActionResult, error) {
				if err := do(a.admin, ctx, string(in.Name)); err != nil {
					return scheduleActionResult{}, err
				}
				return scheduleActionResult{Schedule: string(in.Name), Action: action.String(), Actor: string(a.actor)}, nil
			})
	}
	scheduleAction("schedule_pause", "Pause a Recurring Schedule",
		"Stops the schedule from minting jobs until schedule_resume; jobs it already minted are unaffected. Audited; needs the TriggerSchedule permission.",
		permission.ActionPauseSchedule, writeHints{idempotent: true}, (*backwave.Admin).PauseSchedule)
	scheduleAction("schedule_resume", "Resume a Recurring Schedule",
		"Lets a paused schedule mint again, from now on. Audited; needs the TriggerSchedule permission.",
		permission.ActionResumeSchedule, writeHints{idempotent: true}, (*backwave.Admin).ResumeSchedule)
	scheduleAction("schedule_remove", "Remove a Recurring Schedule",
		"Deletes the schedule and its occurrence records; the jobs it minted stay. It cannot be undone here: the application registers schedules in its own code. Audited; needs the TriggerSchedule permission.",
		permission.ActionRemoveSchedule, writeHints{destructive: true}, (*backwave.Admin).RemoveSchedule)
	queueAction := func(name, title, description string, action permission.Action, do func(*backwave.Admin, context.Context, string) error) {
		addWrite(b, name, title, description, action, writeHints{idempotent: true},
			func(ctx context.Context, a acting, in queueRef) (queueActionResult, error) {
				if err := do(a.admin, ctx, string(in.Queue)); err != nil {
					return queueActionResult{}, err
				}
				return queueActionResult{Queue: string(in.Queue), Action: action.String(), Actor: string(a.actor)}, nil
			})
	}
	queueAction("queue_pause", "Pause a Queue",
		"Stops workers claiming jobs from the Queue; Running jobs are unaffected. Audited; needs the PauseQueue permission.",
		permission.ActionPauseQueue, (*backwave.Admin).PauseQueue)
	queueAction("queue_resume", "Resume a Queue",
		"Lets workers claim jobs from a paused Queue again. Audited; needs the PauseQueue permission.",
		permission.ActionResumeQueue, (*backwave.Admin).ResumeQueue)
	addWrite(b, "queue_set_limit", "Set a Queue's Concurrency Limit",
		"Sets the Queue's cluster-wide Concurrency Limit (0 removes it). A lowered limit never revokes a Lease: it stops claims until the Running count drops below it. Audited; needs the PauseQueue permission.",
		permission.ActionSetQueueLimit, writeHints{idempotent: true},
		func(ctx context.Context, a acting, in queueLimitInput) (queueActionResult, error) {
			if err := a.admin.SetQueueLimit(ctx, string(in.Queue), int(in.Limit)); err != nil {
				return queueActionResult{}, err
			}
			return queueActionResult{Queue: string(in.Queue), Action: permission.ActionSetQueueLimit.String(), Limit: new(int(in.Limit)), Actor: string(a.actor)}, nil
		})
}

type bulkInput struct {
	filterInput
	DryRun bool      `json:"dry_run,omitempty" jsonschema:"preview only: count the jobs the filter matches and how many the action applies to, and change nothing"`
	Limit  bulkLimit `json:"limit,omitempty" jsonschema:"the most matching jobs this call examines (1000 if absent; at most 10000, a larger limit is refused)"`
	Before cursor    `json:"before,omitempty" jsonschema:"the next of the previous call, to go on past the jobs it examined"`
}

type bulkSkip struct {
	Reason string `json:"reason"`
	Jobs   int    `json:"jobs"`
}

type bulkResult struct {
	Action     string     `json:"action" jsonschema:"the Operator Action applied to each job"`
	DryRun     bool       `json:"dry_run,omitempty" jsonschema:"true when nothing was changed: matched and applicable are the preview"`
	Matched    int        `json:"matched,omitempty" jsonschema:"dry run: how many jobs the filter matches, in any state"`
	Applicable int        `json:"applicable,omitempty" jsonschema:"dry run: how many of them the action applies to"`
	AtLeast    bool       `json:"at_least,omitempty" jsonschema:"dry run: the count stopped at 100,000 matching jobs"`
	Acted      int        `json:"acted" jsonschema:"how many jobs the action was applied to, each audited"`
	Skipped    int        `json:"skipped" jsonschema:"how many matching jobs were examined and left as they were"`
	Skips      []bulkSkip `json:"skips,omitempty" jsonschema:"why jobs were skipped, most frequent first"`
	More       bool       `json:"more" jsonschema:"matching jobs remain: call again, with before set to next to go on past the ones examined"`
	Next       cursor     `json:"next,omitempty"`
	Actor      string     `json:"actor" jsonschema:"the Actor the audit trail recorded for each job"`
}

// addBulkWrites adds job_delete and the tools acting on every job a filter
// matches.
func addBulkWrites(b *builder) {
	addWrite(b, "job_delete", "Delete a job",
		"Removes a terminal (succeeded, dead_lettered, cancelled or quarantined) job with everything stored beside it, before retention would. A live job is refused, and so is one retention keeps too (a stored job depends on it, its Workflow has a live member, or a Transition Observer has not read it yet). The audit entry outlives the job. Audited; needs the Delete permission.",
		permission.ActionDelete, writeHints{destructive: true},
		func(ctx context.Context, a acting, in jobRef) (jobActionResult, error) {
			j, err := a.admin.Delete(ctx, backwave.JobID(in.ID))
			if err != nil {
				return jobActionResult{}, err
			}
			return jobAction(a, j), nil
		})
	for _, t := range []struct {
		name, title, description string
		bulk                     backwave.BulkAction
		action                   permission.Action
		h                        writeHints
	}{
		{"job_requeue_matching", "Requeue every matching job",
			"Requeues every dead_lettered or quarantined job the filter matches, newest first, as job_requeue would each (one audit entry per job), up to limit per call. dry_run previews the counts. A job that changed state meanwhile is skipped and counted. Needs the Requeue permission.",
			backwave.BulkRequeue, permission.ActionRequeueMatching, writeHints{}},
		{"job_cancel_matching", "Cancel every matching job",
			"Cancels every live job the filter matches, newest first, as job_cancel would each (one audit entry per job), up to limit per call. dry_run previews the counts. A job that changed state meanwhile is skipped and counted. Needs the Cancel permission.",
			backwave.BulkCancel, permission.ActionCancelMatching, writeHints{destructive: true}},
		{"job_delete_matching", "Delete every matching job",
			"Deletes every terminal job the filter matches, newest first (dependents before their parents), as job_delete would each (one audit entry per job), up to limit per call. dry_run previews the counts. A job still needed is skipped with the reason. Needs the Delete permission.",
			backwave.BulkDelete, permission.ActionDeleteMatching, writeHints{destructive: true}},
	} {
		addWrite(b, t.name, t.title, t.description, t.action, t.h,
			func(ctx context.Context, a acting, in bulkInput) (bulkResult, error) {
				f, err := in.filter()
				if err != nil {
					return bulkResult{}, err
				}
				out := bulkResult{Action: t.bulk.String(), Actor: string(a.actor)}
				if in.DryRun {
					p, err := a.admin.PreviewMatching(ctx, t.bulk, f)
					if err != nil {
						return bulkResult{}, err
					}
					out.DryRun, out.Matched, out.Applicable, out.AtLeast = true, p.Matched, p.Applicable, p.AtLeast
					return out, nil
				}
				res, err := a.admin.Matching(ctx, t.bulk, f, backwave.BulkOptions{Limit: int(in.Limit), Before: backwave.Cursor(in.Before)})
				if err != nil {
					return bulkResult{}, fmt.Errorf("%w (acted on %d before it stopped)", err, res.Acted)
				}
				out.Acted, out.Skipped, out.More, out.Next = res.Acted, res.Skipped, res.More, cursor(res.Next)
				for _, s := range res.Skips {
					out.Skips = append(out.Skips, bulkSkip{s.Reason, s.Jobs})
				}
				return out, nil
			})
	}
}

// addQueueRemove adds queue_remove, the last of the catalogue.
func addQueueRemove(b *builder) {
	addWrite(b, "queue_remove", "Remove an empty Queue",
		"Removes a Queue that holds no job in any state (finished ones count until retention purges them), with all its settings: pause, Concurrency Limit, Rate Limit, Key Limit, Key Rate, Fair Claim. A Queue holding jobs is refused, saying how many; a job enqueued to the name later makes it known again, with no settings. Audited; needs the PauseQueue permission.",
		permission.ActionRemoveQueue, writeHints{destructive: true},
		func(ctx context.Context, a acting, in queueRef) (queueActionResult, error) {
			if err := a.admin.RemoveQueue(ctx, string(in.Queue)); err != nil {
				return queueActionResult{}, err
			}
			return queueActionResult{Queue: string(in.Queue), Action: permission.ActionRemoveQueue.String(), Actor: string(a.actor)}, nil
		})
}
