package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

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
				Action: queueAction(func(ctx context.Context, s store.Store, a store.Actor, q string, _ []string) (string, error) {
					return "paused " + q, s.QueuePause(ctx, store.QueueParams{Queue: q, Actor: a})
				}, 0),
			},
			{
				Name:      "resume",
				Usage:     "let claims from a Queue start again",
				UsageText: "backwave queues resume --db URI [--actor WHO] QUEUE",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: queueAction(func(ctx context.Context, s store.Store, a store.Actor, q string, _ []string) (string, error) {
					return "resumed " + q, s.QueueResume(ctx, store.QueueParams{Queue: q, Actor: a})
				}, 0),
			},
			{
				Name:      "limit",
				Usage:     "set a Queue's cluster-wide Concurrency Limit; 0 removes it",
				UsageText: "backwave queues limit --db URI [--actor WHO] QUEUE N",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: queueAction(func(ctx context.Context, s store.Store, a store.Actor, q string, rest []string) (string, error) {
					n, err := strconv.Atoi(rest[0])
					if err != nil || n < 0 {
						return "", usagef("limit %q is not a non-negative integer", rest[0])
					}
					msg := fmt.Sprintf("%s: concurrency limit %d", q, n)
					if n == 0 {
						msg = q + ": no concurrency limit"
					}
					return msg, s.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: q, Limit: n, Actor: a})
				}, 1),
			},
		},
	}
}

// queueAction runs fn on the Queue named by the first argument, with extra
// more arguments after it.
func queueAction(fn func(ctx context.Context, s store.Store, a store.Actor, queue string, rest []string) (string, error), extra int) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		args := cmd.Args().Slice()
		if len(args) != 1+extra {
			return usagef("usage: %s", cmd.UsageText)
		}
		if err := store.ValidateName("queue", args[0]); err != nil {
			return usageError{err}
		}
		actor, err := actorOf(cmd)
		if err != nil {
			return err
		}
		s, err := openStore(ctx, cmd)
		if err != nil {
			return err
		}
		defer func() { _ = s.Close() }()
		msg, err := fn(ctx, s, actor, args[0], args[1:])
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
	s, err := openStore(ctx, cmd)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	qs, err := s.QueueList(ctx)
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
			out[i] = view(q)
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
