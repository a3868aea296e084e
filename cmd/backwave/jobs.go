package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
)

func jobsCommand() *cli.Command {
	return &cli.Command{
		Name:      "jobs",
		Usage:     "list, show, cancel, requeue, reschedule and delete jobs, one or every match of a filter; counts and the audit trail",
		UsageText: "backwave jobs list|show|cancel|requeue|reschedule|delete|counts|audit --db URI …",
		Commands: append([]*cli.Command{
			{
				Name:      "list",
				Usage:     "list jobs, newest first",
				UsageText: "backwave jobs list --db URI [--state S] [--queue Q] [--wire-name NAME] [--label TEXT]… [--tag KEY=VALUE]… [--retrying] [--limit N] [--before ID] [--json]",
				Description: "The RETRY CAUSE column shows why a job went back to Scheduled only where that explains its\n" +
					"state: a retrying (Scheduled) or Dead-Lettered job. A job that succeeded after a retry keeps\n" +
					"its Retry Cause as a record (jobs show, --json), but its row reads as what it is. LAST FAILURE is the\n" +
					"first line of the newest Failure Detail of such a job, and of a Quarantined one (one Transition Log\n" +
					"read each); FINISHED AT is when a terminal job reached its state.",
				Flags: append([]cli.Flag{
					dbFlag(),
					&cli.BoolFlag{Name: "retrying", Usage: "the Retrying view: Scheduled jobs with a Retry Cause"},
					&cli.StringSliceFlag{Name: "state", Usage: "keep jobs in this state (repeatable or comma-separated): " + stateNames()},
					&cli.StringFlag{Name: "queue", Usage: "keep jobs of this Queue"},
					&cli.StringFlag{Name: "wire-name", Usage: "keep jobs of this Wire Name"},
					limitFlag("jobs", 50, backwave.MaxPageLimit),
					&cli.Int64Flag{Name: "before", Usage: "list jobs with a smaller id (the next page: the last id shown)"},
					jsonFlag(),
				}, tagFlags("keep jobs carrying")...),
				Action: jobsList,
			},
			{
				Name:      "show",
				Usage:     "show one job, with its Dependency parents and dependents, and its Transition Log and Job Output where the store keeps them",
				UsageText: "backwave jobs show --db URI [--json] ID",
				Flags:     []cli.Flag{dbFlag(), jsonFlag()},
				Action:    jobsShow,
			},
			{
				Name:  "cancel",
				Usage: "cancel a job: a waiting one at once, a running one at its next heartbeat",
				UsageText: "backwave jobs cancel --db URI [--actor WHO] ID\n" +
					"backwave jobs cancel --db URI [--actor WHO] --all [--state S] [--queue Q] [--wire-name NAME] [--label TEXT]… [--tag KEY=VALUE]… [--dry-run] [--limit N] [--before ID] [--json]",
				Flags:  append([]cli.Flag{dbFlag(), actorFlag()}, bulkFlags()...),
				Action: bulkOr(backwave.BulkCancel, jobsCancel),
			},
		}, operatorCommands()...),
	}
}

// listFailureRunes bounds the LAST FAILURE column of jobs list.
const listFailureRunes = 60

func stateNames() string {
	var names []string
	for _, s := range backwave.JobStates() {
		names = append(names, s.String())
	}
	return strings.Join(names, ", ")
}

// statesOf parses the --state values.
func statesOf(cmd *cli.Command) ([]backwave.JobState, error) {
	var out []backwave.JobState
	for _, raw := range cmd.StringSlice("state") {
		st, err := backwave.ParseJobState(strings.TrimSpace(raw))
		if err != nil {
			return nil, usagef("--state %q is not a state (want one of %s)", raw, stateNames())
		}
		out = append(out, st)
	}
	return out, nil
}

func jobsList(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	p := backwave.JobListParams{
		JobFilter:  backwave.JobFilter{Queue: cmd.String("queue"), WireName: cmd.String("wire-name"), Retrying: cmd.Bool("retrying")},
		PageParams: backwave.PageParams{Before: backwave.Cursor(cmd.Int64("before"))},
	}
	if err := validFilter(p.JobFilter); err != nil {
		return err
	}
	var err error
	if p.Limit, err = limitOf(cmd, backwave.MaxPageLimit); err != nil {
		return err
	}
	if p.Before < 0 {
		return usagef("--before %d is negative", p.Before)
	}
	if p.States, err = statesOf(cmd); err != nil {
		return err
	}
	if p.Tags, err = tagsOf(cmd); err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	page, err := a.Jobs(ctx, p)
	if err != nil {
		return err
	}
	jobs := page.Items
	// The last Failure Detail's first line of each job a failure explains
	// (one Transition Log read each).
	failures := map[backwave.JobID]string{}
	for _, j := range jobs {
		if j.HasFailed() {
			if failures[j.ID], err = a.LastFailure(ctx, j.ID, listFailureRunes); err != nil {
				return err
			}
		}
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		views := make([]jobView, len(jobs))
		for i := range jobs {
			views[i] = viewOf(&jobs[i])
			views[i].LastFailure = failures[jobs[i].ID]
		}
		return writeJSON(w, views)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tQUEUE\tWIRE NAME\tATTEMPT\tSCHEDULED AT\tFINISHED AT\tRETRY CAUSE\tLAST FAILURE")
	for _, j := range jobs {
		finished := "-"
		if !j.FinalizedAt.IsZero() {
			finished = stamp(j.FinalizedAt)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", j.ID, j.State, j.Queue, j.WireName, j.Attempt, j.MaxAttempts,
			stamp(j.ScheduledAt), finished, dash(explainingCause(&j)), dash(failures[j.ID]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(jobs) == 0 {
		fmt.Fprintln(w, "(no jobs)")
	} else if page.Next != 0 {
		fmt.Fprintf(w, "(more: --before %d)\n", page.Next)
	}
	return nil
}

// explainingCause is a job's Retry Cause where it explains the job's
// state: a retrying (Scheduled) or a Dead-Lettered job. A Retry Cause is
// sticky, so a job that succeeded after a retry still has one; in a list
// it would read as a failure.
func explainingCause(j *backwave.JobInfo) string {
	switch j.State {
	case backwave.StateScheduled, backwave.StateDeadLettered:
		return j.RetryCause.String()
	}
	return ""
}

// idArg parses the one positional job id.
func idArg(cmd *cli.Command) (backwave.JobID, error) {
	if cmd.Args().Len() != 1 {
		return 0, usagef("%s takes one job id, got %d arguments", cmd.FullName(), cmd.Args().Len())
	}
	n, err := strconv.ParseInt(cmd.Args().First(), 10, 64)
	if err != nil || n < 1 {
		return 0, usagef("%q is not a job id (a positive integer)", cmd.Args().First())
	}
	return backwave.JobID(n), nil
}

func jobsShow(ctx context.Context, cmd *cli.Command) error {
	id, err := idArg(cmd)
	if err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	d, err := a.Job(ctx, id)
	if err != nil {
		return noSuchJob(err, id)
	}
	j, output, log := d.Job, d.Output, transitionsOf(d.Transitions)
	v := viewOf(&j)
	v.Transitions = log
	for _, e := range d.Rewrites {
		v.Rewrites = append(v.Rewrites, rewriteView{At: stampJSON(e.At), Action: e.Action.String(), Detail: e.Detail})
	}
	if v.Dependency, err = dependencyViewOf(ctx, a, id); err != nil {
		return err
	}
	if output != nil {
		v.Output = rawOrString(output)
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		return writeJSON(w, v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("id", j.ID)
	row("wire name", j.WireName)
	row("queue", j.Queue)
	row("state", j.State)
	if why := j.EndedBecause(); why != "" {
		row("ended because", why)
	}
	row("attempt", fmt.Sprintf("%d (a failing Attempt %d or later dead-letters it; max attempts %d)", j.Attempt, j.Ceiling, j.MaxAttempts))
	row("snoozes", j.Snoozes)
	row("scheduled at", stamp(j.ScheduledAt))
	row("created at", stamp(j.CreatedAt))
	row("finalized at", stamp(j.FinalizedAt))
	row(retryCauseLabel(&j), dash(j.RetryCause.String()))
	row("cancel cause", dash(j.CancelCause.String()))
	if j.State == backwave.StateRunning {
		row("worker", j.Worker)
		row("lease expires at", stamp(j.LeaseExpiresAt))
	}
	row("cancel requested", j.CancelRequested)
	row("tags", dash(tagList(j.Tags)))
	row("payload", dash(string(j.Payload)))
	if output != nil {
		row("output", string(output))
	}
	if c := j.Cursor; c != nil {
		row("cursor", fmt.Sprintf("%s (saved by attempt %d at %s)", c.Value, c.Attempt, stamp(c.At)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printDependencies(w, v.Dependency); err != nil {
		return err
	}
	fmt.Fprintln(w, "\ntransition log:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  AT\tFROM\tTO\tBY\tATTEMPT\tFAILURE DETAIL")
	for _, t := range d.Transitions {
		from := t.From.String()
		if t.From == backwave.StateUnknown { // the insert: no state before it
			from = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\n", stamp(t.At), from, t.State, t.Via, t.Attempt, dash(firstLine(t.FailureDetail)))
	}
	if err := tw.Flush(); err != nil || len(d.Rewrites) == 0 {
		return err
	}
	// A rewrite changes no state: it is in the audit trail, not the log.
	fmt.Fprintln(w, "\nrewrites (unique key replace and debounce):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  AT\tACTION\tDETAIL")
	for _, e := range d.Rewrites {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", stamp(e.At), e.Action, e.Detail)
	}
	return tw.Flush()
}

// rewriteView is one entry of a job's rewrites as jobs show prints it in
// JSON.
type rewriteView struct {
	At     string `json:"at"`
	Action string `json:"action"`
	Detail string `json:"detail"`
}

// retryCauseLabel names the Retry Cause row of jobs show: where the cause
// does not explain the state, it is the record of the last retry.
func retryCauseLabel(j *backwave.JobInfo) string {
	if j.RetryCause.String() != "" && explainingCause(j) == "" {
		return "last retry cause"
	}
	return "retry cause"
}

func jobsCancel(ctx context.Context, cmd *cli.Command) error {
	id, err := idArg(cmd)
	if err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	j, err := a.Cancel(ctx, id)
	if err != nil {
		return noSuchJob(err, id)
	}
	if j.State == backwave.StateRunning {
		fmt.Fprintf(cmd.Root().Writer, "job %d: cancel requested; its worker stops it at the next heartbeat\n", id)
	} else {
		fmt.Fprintf(cmd.Root().Writer, "job %d: %s\n", id, j.State)
	}
	return nil
}

// jobView is a job as the command prints it in JSON.
type jobView struct {
	ID            int64  `json:"id"`
	WireName      string `json:"wire_name"`
	Queue         string `json:"queue"`
	State         string `json:"state"`
	Attempt       int    `json:"attempt"`
	MaxAttempts   int    `json:"max_attempts"`
	ScheduledAt   string `json:"scheduled_at"`
	CreatedAt     string `json:"created_at"`
	FinalizedAt   string `json:"finalized_at,omitempty"`
	RetryCause    string `json:"retry_cause,omitempty"`
	CancelCause   string `json:"cancel_cause,omitempty"`
	TerminalCause string `json:"terminal_cause,omitempty"`
	EndedBecause  string `json:"ended_because,omitempty"`
	// LastFailure is the first line of the last Failure Detail, in a list,
	// of a job a failure explains.
	LastFailure     string          `json:"last_failure,omitempty"`
	Worker          string          `json:"worker,omitempty"`
	LeaseExpiresAt  string          `json:"lease_expires_at,omitempty"`
	CancelRequested bool            `json:"cancel_requested,omitempty"`
	Tags            []tagView       `json:"tags,omitempty"`
	Payload         json.RawMessage `json:"payload,omitempty"`
	Output          json.RawMessage `json:"output,omitempty"`
	Cursor          *cursorView     `json:"cursor,omitempty"`
	Transitions     []transition    `json:"transitions,omitempty"`
	Rewrites        []rewriteView   `json:"rewrites,omitempty"`
	Dependency      *dependencyView `json:"dependency,omitempty"`
}

func viewOf(j *backwave.JobInfo) jobView {
	v := jobView{
		ID: int64(j.ID), WireName: j.WireName, Queue: j.Queue, State: j.State.String(),
		Attempt: int(j.Attempt), MaxAttempts: j.MaxAttempts,
		ScheduledAt: stampJSON(j.ScheduledAt), CreatedAt: stampJSON(j.CreatedAt), FinalizedAt: stampJSON(j.FinalizedAt),
		RetryCause: j.RetryCause.String(), CancelCause: j.CancelCause.String(),
		TerminalCause: j.TerminalCause.String(), EndedBecause: j.EndedBecause(),
		Worker: j.Worker, LeaseExpiresAt: stampJSON(j.LeaseExpiresAt), CancelRequested: j.CancelRequested,
	}
	for _, t := range j.Tags {
		v.Tags = append(v.Tags, tagViewOf(t))
	}
	if len(j.Payload) > 0 {
		v.Payload = rawOrString(j.Payload)
	}
	if c := j.Cursor; c != nil {
		v.Cursor = &cursorView{Attempt: int(c.Attempt), At: stampJSON(c.At), Value: rawOrString(c.Value)}
	}
	return v
}

// cursorView is a job's Cursor as the command prints it in JSON.
type cursorView struct {
	Attempt int             `json:"attempt"`
	At      string          `json:"at"`
	Value   json.RawMessage `json:"value"`
}

// rawOrString keeps valid JSON in valid UTF-8 as it is and quotes
// anything else (invalid UTF-8 as U+FFFD), so the JSON printed is valid.
func rawOrString(b []byte) json.RawMessage {
	if json.Valid(b) && utf8.Valid(b) {
		return b
	}
	q, _ := json.Marshal(string(b)) // a string always marshals
	return q
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
