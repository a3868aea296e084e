package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
)

func queuesCommand() *cli.Command {
	return &cli.Command{
		Name:      "queues",
		Usage:     "list Queues, pause and resume them, set their Concurrency Limit",
		UsageText: "backwave queues list|pause|resume|limit --db URI …",
		Commands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list every known Queue with its settings and Running count",
				UsageText: "backwave queues list --db URI [--json]",
				Flags:     []cli.Flag{dbFlag(), &cli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
				Action:    queuesList,
			},
			{
				Name:      "pause",
				Usage:     "stop claims from a Queue (running jobs are unaffected)",
				UsageText: "backwave queues pause --db URI [--actor WHO] QUEUE",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: queueAction(func(ctx context.Context, a *backwave.Admin, q string, _ []string) (string, error) {
					return "paused " + q, a.PauseQueue(ctx, q)
				}, 0),
			},
			{
				Name:      "resume",
				Usage:     "let claims from a Queue start again",
				UsageText: "backwave queues resume --db URI [--actor WHO] QUEUE",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: queueAction(func(ctx context.Context, a *backwave.Admin, q string, _ []string) (string, error) {
					return "resumed " + q, a.ResumeQueue(ctx, q)
				}, 0),
			},
			{
				Name:      "limit",
				Usage:     "set a Queue's cluster-wide Concurrency Limit; 0 removes it",
				UsageText: "backwave queues limit --db URI [--actor WHO] QUEUE N",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: queueAction(func(ctx context.Context, a *backwave.Admin, q string, rest []string) (string, error) {
					n, err := strconv.Atoi(rest[0])
					if err != nil || n < 0 {
						return "", usagef("limit %q is not a non-negative integer", rest[0])
					}
					msg := fmt.Sprintf("%s: concurrency limit %d", q, n)
					if n == 0 {
						msg = q + ": no concurrency limit"
					}
					return msg, a.SetQueueLimit(ctx, q, n)
				}, 1),
			},
		},
	}
}

// queueAction runs fn on the Queue named by the first argument, with extra
// more arguments after it, as the --actor.
func queueAction(fn func(ctx context.Context, a *backwave.Admin, queue string, rest []string) (string, error), extra int) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		args := cmd.Args().Slice()
		if len(args) != 1+extra {
			return usagef("usage: %s", cmd.UsageText)
		}
		if err := store.ValidateName("queue", args[0]); err != nil {
			return usageError{err}
		}
		a, done, err := openAdmin(ctx, cmd)
		if err != nil {
			return err
		}
		defer done()
		msg, err := fn(ctx, a, args[0], args[1:])
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.Root().Writer, msg)
		return nil
	}
}

func queuesList(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	qs, err := a.Queues(ctx)
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		type view struct {
			Name    string `json:"name"`
			Paused  bool   `json:"paused"`
			Limit   int    `json:"limit"`
			Running int    `json:"running"`
		}
		out := make([]view, len(qs))
		for i, q := range qs {
			out[i] = view{Name: q.Name, Paused: q.Paused, Limit: q.Limit, Running: q.Running}
		}
		return writeJSON(w, out)
	}
	if len(qs) == 0 {
		fmt.Fprintln(w, "(no queues)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tPAUSED\tLIMIT\tRUNNING")
	for _, q := range qs {
		limit := "-"
		if q.Limit > 0 {
			limit = strconv.Itoa(q.Limit)
		}
		fmt.Fprintf(tw, "%s\t%t\t%s\t%d\n", q.Name, q.Paused, limit, q.Running)
	}
	return tw.Flush()
}
