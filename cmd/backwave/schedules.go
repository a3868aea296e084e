package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

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
				UsageText: "backwave schedules list --db URI [--json]",
				Flags:     []cli.Flag{dbFlag(), &cli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
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
				UsageText: "backwave schedules occurrences --db URI [--limit N] NAME",
				Flags:     []cli.Flag{dbFlag(), &cli.IntFlag{Name: "limit", Value: 50, Usage: "the most records"}},
				Action:    scheduleOccurrences,
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
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	list, err := a.Schedules(ctx)
	if err != nil {
		return err
	}
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
			Last         string `json:"last"`
			Next         string `json:"next"`
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
	if len(list) == 0 {
		fmt.Fprintln(w, "(no schedules)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULE\tCRON\tZONE\tWIRE NAME\tQUEUE\tCATCH-UP\tNO-OVERLAP\tPAUSED\tLAST\tNEXT\tLAST JOB")
	for _, s := range list {
		lastJob := "-"
		if s.LastJob != 0 {
			lastJob = strconv.FormatInt(int64(s.LastJob), 10)
			if s.InstanceLive {
				lastJob += " (live)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%t\t%t\t%s\t%s\t%s\n", s.Name, s.Cron, dash(s.Zone), s.WireName, s.Queue,
			s.CatchUp, s.NoOverlap, s.Paused, zoned(s.Last), zoned(s.Next), lastJob)
	}
	return tw.Flush()
}

// zoned renders an occurrence in its schedule's zone, with the offset.
func zoned(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02 15:04:05 -07:00")
}

func scheduleOccurrences(ctx context.Context, cmd *cli.Command) error {
	name, err := nameArg(cmd)
	if err != nil {
		return err
	}
	if cmd.Int("limit") < 1 {
		return usagef("--limit %d is below 1", cmd.Int("limit"))
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	page, err := a.ScheduleOccurrences(ctx, name, backwave.OccurrenceListParams{PageParams: backwave.PageParams{Limit: cmd.Int("limit")}})
	if err != nil {
		return err
	}
	occ := page.Items
	w := cmd.Root().Writer
	if len(occ) == 0 {
		fmt.Fprintln(w, "(no occurrence records)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tKIND\tOCCURRENCE\tFROM\tREASON\tJOB\tACTOR\tRECORDED")
	for _, o := range occ {
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
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Seq, o.Kind, stamp(o.At), from, reason, jobID, dash(string(o.Actor)), stamp(o.RecordedAt))
	}
	return tw.Flush()
}
