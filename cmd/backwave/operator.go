package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
)

// operatorCommands are the jobs subcommands for the audited Operator
// Actions and Monitor reads beyond list, show and cancel.
func operatorCommands() []*cli.Command {
	return []*cli.Command{
		{
			Name:  "requeue",
			Usage: "requeue a Dead-Lettered or Quarantined job: Scheduled now, Retry Cause cleared, its max attempts counted afresh from here",
			UsageText: "backwave jobs requeue --db URI [--actor WHO] ID\n" +
				"backwave jobs requeue --db URI [--actor WHO] --all [--state S] [--queue Q] [--wire-name NAME] [--label TEXT]… [--tag KEY=VALUE]… [--dry-run] [--limit N] [--before ID] [--json]",
			Flags: append([]cli.Flag{dbFlag(), actorFlag()}, bulkFlags()...),
			Action: bulkOr(backwave.BulkRequeue, jobAction(func(*cli.Command) (jobFunc, error) {
				return func(ctx context.Context, a *backwave.Admin, id backwave.JobID) (backwave.JobInfo, error) {
					return a.Requeue(ctx, id)
				}, nil
			})),
		},
		{
			Name: "delete",
			Usage: "delete a terminal job (succeeded, dead-lettered, cancelled or quarantined) with everything stored beside it, " +
				"before retention would; audited",
			UsageText: "backwave jobs delete --db URI [--actor WHO] ID\n" +
				"backwave jobs delete --db URI [--actor WHO] --all [--state S] [--queue Q] [--wire-name NAME] [--label TEXT]… [--tag KEY=VALUE]… [--dry-run] [--limit N] [--before ID] [--json]",
			Flags: append([]cli.Flag{dbFlag(), actorFlag()}, bulkFlags()...),
			Action: bulkOr(backwave.BulkDelete, idAction(idArg, noSuchJob, func(*cli.Command) (func(context.Context, *backwave.Admin, backwave.JobID) (string, error), error) {
				return func(ctx context.Context, a *backwave.Admin, id backwave.JobID) (string, error) {
					j, err := a.Delete(ctx, id)
					if err != nil {
						return "", err
					}
					return fmt.Sprintf("job %d: deleted (it was %s)", id, j.State), nil
				}, nil
			})),
		},
		{
			Name:      "reschedule",
			Usage:     "move the due time of a waiting job (no Transition Log entry; audited)",
			UsageText: "backwave jobs reschedule --db URI [--actor WHO] (--at RFC3339 | --in DURATION) ID",
			Flags: []cli.Flag{dbFlag(), actorFlag(),
				&cli.StringFlag{Name: "at", Usage: "the new due time, RFC 3339"},
				&cli.DurationFlag{Name: "in", Usage: "the new due time, this long from now on the store's clock"},
			},
			Action: jobAction(func(cmd *cli.Command) (jobFunc, error) {
				switch raw, in := cmd.String("at"), cmd.Duration("in"); {
				case raw != "" && in != 0:
					return nil, usagef("give --at or --in, not both")
				case raw != "":
					at, err := time.Parse(time.RFC3339Nano, raw)
					if err != nil {
						return nil, usagef("--at %q is not an RFC 3339 time", raw)
					}
					return func(ctx context.Context, a *backwave.Admin, id backwave.JobID) (backwave.JobInfo, error) {
						return a.Reschedule(ctx, id, at)
					}, nil
				case in < 0:
					return nil, usagef("--in %v is in the past (want a positive duration)", in)
				case in != 0:
					// From now on the store's clock, not this host's.
					return func(ctx context.Context, a *backwave.Admin, id backwave.JobID) (backwave.JobInfo, error) {
						return a.RescheduleIn(ctx, id, in)
					}, nil
				default:
					return nil, usagef("give the new due time with --at or --in")
				}
			}),
		},
		{
			Name:      "counts",
			Usage:     "count jobs by Queue and state",
			UsageText: "backwave jobs counts --db URI [--json]",
			Flags:     []cli.Flag{dbFlag(), jsonFlag()},
			Action:    jobsCounts,
		},
		{
			Name:      "audit",
			Usage:     "list the audit trail of Operator Actions, newest first",
			UsageText: "backwave jobs audit --db URI [--job ID] [--queue Q] [--limit N] [--before CURSOR] [--json]",
			Flags: []cli.Flag{dbFlag(),
				&cli.Int64Flag{Name: "job", Usage: "only actions on this job"},
				&cli.StringFlag{Name: "queue", Usage: "only actions on this Queue or its jobs"},
				limitFlag("entries", 50, backwave.MaxPageLimit),
				&cli.Int64Flag{Name: "before", Usage: "list older entries (the next page: the cursor a cut list printed)"},
				jsonFlag(),
			},
			Action: jobsAudit,
		},
	}
}

// jobFunc performs one Operator Action on a job.
type jobFunc func(ctx context.Context, a *backwave.Admin, id backwave.JobID) (backwave.JobInfo, error)

// jobAction runs an action on the job named by the one argument, as the
// --actor, and prints the job's state after it. prepare checks the flags,
// before the store is opened, and returns the action.
func jobAction(prepare func(cmd *cli.Command) (jobFunc, error)) cli.ActionFunc {
	return idAction(idArg, noSuchJob, func(cmd *cli.Command) (func(context.Context, *backwave.Admin, backwave.JobID) (string, error), error) {
		fn, err := prepare(cmd)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, a *backwave.Admin, id backwave.JobID) (string, error) {
			j, err := fn(ctx, a, id)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("job %d: %s, due %s", id, j.State, stamp(j.ScheduledAt)), nil
		}, nil
	})
}

// idAction runs an Operator Action on the one id argument (a job's or a
// Workflow's), as the --actor, and prints what the action says it did:
// parse reads the id, prepare checks the flags before the store is opened
// and returns the action, and notFound names an id the store does not
// hold.
func idAction[ID any](parse func(*cli.Command) (ID, error), notFound func(error, ID) error,
	prepare func(*cli.Command) (func(context.Context, *backwave.Admin, ID) (string, error), error)) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		id, err := parse(cmd)
		if err != nil {
			return err
		}
		fn, err := prepare(cmd)
		if err != nil {
			return err
		}
		a, done, err := openAdmin(ctx, cmd)
		if err != nil {
			return err
		}
		defer done()
		said, err := fn(ctx, a, id)
		if err != nil {
			return notFound(err, id)
		}
		fmt.Fprintln(cmd.Root().Writer, said)
		return nil
	}
}

func jobsCounts(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	counts, err := a.CountByQueue(ctx)
	if err != nil {
		return err
	}
	backlog, err := backlogByQueue(ctx, a)
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		// A scheduled row also says how many of its jobs are ready (due
		// now) and how many are later.
		type view struct {
			Queue string `json:"queue"`
			State string `json:"state"`
			Jobs  int    `json:"jobs"`
			Ready *int   `json:"ready,omitempty"`
			Later *int   `json:"later,omitempty"`
			// ReadyAtLeast says Ready is a lower bound.
			ReadyAtLeast bool `json:"ready_at_least,omitempty"`
		}
		out := make([]view, len(counts))
		for i, c := range counts {
			out[i] = view{Queue: c.Queue, State: c.State.String(), Jobs: c.Count}
			if c.State == backwave.StateScheduled {
				b := backlog[c.Queue]
				out[i].Ready, out[i].Later, out[i].ReadyAtLeast = &b.Ready, &b.Later, b.ReadyAtLeast
			}
		}
		return writeJSON(w, out)
	}
	return printTable(w, "(no jobs)", "QUEUE\tSTATE\tJOBS\tREADY\tLATER", counts, func(c backwave.QueueStateCount) string {
		ready, later := "-", "-"
		if c.State == backwave.StateScheduled {
			b := backlog[c.Queue]
			ready, later = readyText(b), strconv.Itoa(b.Later)
		}
		return fmt.Sprintf("%s\t%s\t%d\t%s\t%s", c.Queue, c.State, c.Count, ready, later)
	})
}

func jobsAudit(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	limit, err := limitOf(cmd, backwave.MaxPageLimit)
	if err != nil {
		return err
	}
	if n := cmd.Int64("job"); n < 0 {
		return usagef("--job %d is not a job id (a positive integer)", n)
	}
	if n := cmd.Int64("before"); n < 0 {
		return usagef("--before %d is negative", n)
	}
	if q := cmd.String("queue"); q != "" {
		if err := validName("queue", q); err != nil {
			return err
		}
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	page, err := a.Audit(ctx, backwave.AuditListParams{
		JobID: backwave.JobID(cmd.Int64("job")), Queue: cmd.String("queue"),
		PageParams: backwave.PageParams{Limit: limit, Before: backwave.Cursor(cmd.Int64("before"))},
	})
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		type view struct {
			At     string `json:"at"`
			Actor  string `json:"actor"`
			Action string `json:"action"`
			Job    int64  `json:"job,omitempty"`
			Queue  string `json:"queue,omitempty"`
			Detail string `json:"detail,omitempty"`
		}
		out := make([]view, len(page.Items))
		for i, e := range page.Items {
			out[i] = view{stampJSON(e.At), string(e.Actor), e.Action.String(), int64(e.JobID), e.Queue, e.Detail}
		}
		return writeJSON(w, out)
	}
	err = printTable(w, "(no audit entries)", "AT\tACTOR\tACTION\tJOB\tQUEUE\tDETAIL", page.Items, func(e backwave.AuditEntry) string {
		id := "-"
		if e.JobID != 0 {
			id = e.JobID.String()
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", stamp(e.At), e.Actor, e.Action, id, dash(e.Queue), dash(e.Detail))
	})
	if err != nil {
		return err
	}
	if page.Next != 0 {
		fmt.Fprintf(w, "(more: --before %d)\n", page.Next)
	}
	return nil
}

// tagsCommand is Tag Facet and Tag Suggest.
func tagsCommand() *cli.Command {
	return &cli.Command{
		Name:      "tags",
		Usage:     "Tag Facet (the dominant Tags of a slice) and Tag Suggest (prefix completion)",
		UsageText: "backwave tags facet|suggest --db URI …",
		Commands: []*cli.Command{
			{
				Name:      "facet",
				Usage:     "the top Tags of the jobs a filter keeps, by count",
				UsageText: "backwave tags facet --db URI [--state S] [--queue Q] [--label TEXT]… [--tag KEY=VALUE]… [--limit N] [--json]",
				Flags: append([]cli.Flag{dbFlag(),
					&cli.StringSliceFlag{Name: "state", Usage: "keep jobs in this state (repeatable or comma-separated): " + stateNames()},
					&cli.StringFlag{Name: "queue", Usage: "keep jobs of this Queue"},
					limitFlag("Tags", 10, maxTagLimit),
					jsonFlag(),
				}, tagFlags("keep jobs carrying")...),
				Action: tagsFacet,
			},
			{
				Name:      "suggest",
				Usage:     "complete a Tag prefix, case-insensitively, over every Tag in the store",
				UsageText: "backwave tags suggest --db URI [--limit N] [--json] [PREFIX]",
				Flags:     []cli.Flag{dbFlag(), limitFlag("Tags", 20, maxTagLimit), jsonFlag()},
				Action:    tagsSuggest,
			},
		},
	}
}

func tagsFacet(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	f := backwave.JobFilter{Queue: cmd.String("queue")}
	if err := validFilter(f); err != nil {
		return err
	}
	limit, err := limitOf(cmd, maxTagLimit)
	if err != nil {
		return err
	}
	if f.States, err = statesOf(cmd); err != nil {
		return err
	}
	if f.Tags, err = tagsOf(cmd); err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	buckets, err := a.TagFacet(ctx, f, limit)
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		type view struct {
			Tag  tagView `json:"tag"`
			Jobs int     `json:"jobs"`
		}
		out := make([]view, len(buckets))
		for i, b := range buckets {
			out[i] = view{tagViewOf(b.Tag), b.Count}
		}
		return writeJSON(w, out)
	}
	return printTable(w, "(no tags)", "TAG\tJOBS", buckets, func(b backwave.TagCount) string {
		return fmt.Sprintf("%s\t%d", tagText(b.Tag), b.Count)
	})
}

func tagsSuggest(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() > 1 {
		return usagef("usage: %s", cmd.UsageText)
	}
	limit, err := limitOf(cmd, maxTagLimit)
	if err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	tags, err := a.TagSuggest(ctx, cmd.Args().First(), limit)
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		out := make([]tagView, len(tags))
		for i, t := range tags {
			out[i] = tagViewOf(t)
		}
		return writeJSON(w, out)
	}
	if len(tags) == 0 {
		fmt.Fprintln(w, "(no tags)")
		return nil
	}
	for _, t := range tags {
		fmt.Fprintln(w, tagText(t))
	}
	return nil
}
