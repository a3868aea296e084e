package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
)

func schedulesCommand() *cli.Command {
	return &cli.Command{
		Name:      "schedules",
		Usage:     "list Recurring Schedules, trigger one now, pause, resume or remove one, show what became of its occurrences",
		UsageText: "backwave schedules list|trigger|pause|resume|remove|occurrences --db URI …",
		Description: "Schedules are registered from code (Config.Schedules, Client.RegisterSchedule); these\n" +
			"commands inspect them and perform the audited Operator Actions on them.",
		Commands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list every schedule with its last and next occurrence",
				UsageText: "backwave schedules list --db URI [--limit N] [--json]",
				Flags:     []cli.Flag{dbFlag(), limitFlag("schedules", 50, backwave.MaxPageLimit), jsonFlag()},
				Action:    schedulesList,
			},
			{
				Name:      "trigger",
				Usage:     "enqueue one job from the schedule now (audited; refused under No-Overlap while an instance is live)",
				UsageText: "backwave schedules trigger --db URI [--actor WHO] NAME",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: scheduleAction(func(ctx context.Context, a *backwave.Admin, name string) (string, error) {
					id, err := a.TriggerSchedule(ctx, name)
					return fmt.Sprintf("triggered %s: job %d", name, id), err
				}),
			},
			{
				Name:      "pause",
				Usage:     "stop the schedule from minting (audited)",
				UsageText: "backwave schedules pause --db URI [--actor WHO] NAME",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: scheduleAction(func(ctx context.Context, a *backwave.Admin, name string) (string, error) {
					return "paused " + name, a.PauseSchedule(ctx, name)
				}),
			},
			{
				Name:      "resume",
				Usage:     "let a paused schedule mint again, from now (audited; the paused span is not made up)",
				UsageText: "backwave schedules resume --db URI [--actor WHO] NAME",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: scheduleAction(func(ctx context.Context, a *backwave.Admin, name string) (string, error) {
					return "resumed " + name, a.ResumeSchedule(ctx, name)
				}),
			},
			{
				Name:      "remove",
				Usage:     "delete the schedule and its occurrence records; the jobs it minted stay (audited)",
				UsageText: "backwave schedules remove --db URI [--actor WHO] NAME",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: scheduleAction(func(ctx context.Context, a *backwave.Admin, name string) (string, error) {
					return "removed " + name, a.RemoveSchedule(ctx, name)
				}),
			},
			{
				Name:      "occurrences",
				Usage:     "show what became of a schedule's occurrences, newest first: minted, made up, skipped, triggered",
				UsageText: "backwave schedules occurrences --db URI [--limit N] [--before SEQ] [--json] NAME",
				Flags: []cli.Flag{dbFlag(), limitFlag("records", 50, backwave.MaxPageLimit),
					&cli.Int64Flag{Name: "before", Usage: "list older records (the next page: the cursor a cut list printed)"},
					jsonFlag(),
				},
				Action: scheduleOccurrences,
			},
		},
	}
}

// nameArg returns the one argument, a schedule name.
func nameArg(cmd *cli.Command) (string, error) {
	args := cmd.Args().Slice()
	if len(args) != 1 {
		return "", usagef("usage: %s", cmd.UsageText)
	}
	if err := validName("schedule name", args[0]); err != nil {
		return "", err
	}
	return args[0], nil
}

// scheduleAction runs fn on the schedule named by the one argument, as the
// --actor, and prints its message.
func scheduleAction(fn func(ctx context.Context, a *backwave.Admin, name string) (string, error)) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		name, err := nameArg(cmd)
		if err != nil {
			return err
		}
		admin, done, err := openAdmin(ctx, cmd)
		if err != nil {
			return err
		}
		defer done()
		if err := scheduleExists(ctx, admin, name); err != nil {
			return err
		}
		msg, err := fn(ctx, admin, name)
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.Root().Writer, msg)
		return nil
	}
}

func schedulesList(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	limit, err := limitOf(cmd, backwave.MaxPageLimit)
	if err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	list, err := a.Schedules(ctx)
	if err != nil {
		return err
	}
	total := len(list)
	list = list[:min(limit, total)]
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		type view struct {
			Name         string `json:"name"`
			Cron         string `json:"cron"`
			Zone         string `json:"zone"`
			WireName     string `json:"wire_name"`
			Queue        string `json:"queue"`
			CatchUp      string `json:"catch_up"`
			NoOverlap    bool   `json:"no_overlap"`
			Paused       bool   `json:"paused"`
			Last         string `json:"last,omitempty"`
			Next         string `json:"next,omitempty"`
			LastJob      int64  `json:"last_job,omitempty"`
			InstanceLive bool   `json:"instance_live"`
		}
		out := make([]view, len(list))
		for i, s := range list {
			out[i] = view{s.Name, s.Cron, s.Zone, s.WireName, s.Queue, s.CatchUp.String(), s.NoOverlap, s.Paused,
				stampJSON(s.Last), stampJSON(s.Next), int64(s.LastJob), s.InstanceLive}
		}
		return writeJSON(w, out)
	}
	err = printTable(w, "(no schedules)", "SCHEDULE\tCRON\tZONE\tWIRE NAME\tQUEUE\tCATCH-UP\tNO-OVERLAP\tPAUSED\tLAST\tNEXT\tLAST JOB", list, func(s backwave.ScheduleInfo) string {
		lastJob := "-"
		if s.LastJob != 0 {
			lastJob = strconv.FormatInt(int64(s.LastJob), 10)
			if s.InstanceLive {
				lastJob += " (live)"
			}
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%t\t%t\t%s\t%s\t%s", s.Name, s.Cron, dash(s.Zone), s.WireName, s.Queue,
			s.CatchUp, s.NoOverlap, s.Paused, zoned(s.Last), zoned(s.Next), lastJob)
	})
	if err != nil {
		return err
	}
	if total > len(list) {
		fmt.Fprintln(w, more(cmd, len(list), total))
	}
	return nil
}

func scheduleOccurrences(ctx context.Context, cmd *cli.Command) error {
	name, err := nameArg(cmd)
	if err != nil {
		return err
	}
	limit, err := limitOf(cmd, backwave.MaxPageLimit)
	if err != nil {
		return err
	}
	if n := cmd.Int64("before"); n < 0 {
		return usagef("--before %d is negative", n)
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	if err := scheduleExists(ctx, a, name); err != nil {
		return err
	}
	page, err := a.ScheduleOccurrences(ctx, name, backwave.OccurrenceListParams{
		PageParams: backwave.PageParams{Limit: limit, Before: backwave.Cursor(cmd.Int64("before"))},
	})
	if err != nil {
		return err
	}
	occ := page.Items
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		type view struct {
			Seq        int64  `json:"seq"`
			Kind       string `json:"kind"`
			At         string `json:"at"`
			First      string `json:"first,omitempty"`
			Reason     string `json:"reason,omitempty"`
			Job        int64  `json:"job,omitempty"`
			Actor      string `json:"actor,omitempty"`
			RecordedAt string `json:"recorded_at"`
		}
		out := make([]view, len(occ))
		for i, o := range occ {
			v := view{Seq: int64(o.Seq), Kind: o.Kind.String(), At: stampJSON(o.At), Job: int64(o.Job), Actor: string(o.Actor), RecordedAt: stampJSON(o.RecordedAt)}
			if !o.First.Equal(o.At) {
				v.First = stampJSON(o.First)
			}
			if o.Reason != 0 {
				v.Reason = o.Reason.String()
			}
			out[i] = v
		}
		return writeJSON(w, out)
	}
	err = printTable(w, "(no occurrence records)", "SEQ\tKIND\tOCCURRENCE\tFROM\tREASON\tJOB\tACTOR\tRECORDED", occ, func(o backwave.Occurrence) string {
		from, reason, jobID := "-", "-", "-"
		if !o.First.Equal(o.At) {
			from = stamp(o.First)
		}
		if o.Reason != 0 {
			reason = o.Reason.String()
		}
		if o.Job != 0 {
			jobID = strconv.FormatInt(int64(o.Job), 10)
		}
		return fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s", o.Seq, o.Kind, stamp(o.At), from, reason, jobID, dash(string(o.Actor)), stamp(o.RecordedAt))
	})
	if err != nil {
		return err
	}
	if page.Next != 0 {
		fmt.Fprintf(w, "(more: --before %d)\n", page.Next)
	}
	return nil
}
