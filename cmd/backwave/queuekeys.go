package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
)

// The key policy of a Queue: Key Limit, Key Rate and Fair Claim, and the
// show command that lists a Queue's settings with its top Concurrency Keys.

func keyLimitCommand() *cli.Command {
	return &cli.Command{
		Name:  "key-limit",
		Usage: "set a Queue's Key Limit: at most N Running jobs per Concurrency Key, cluster-wide; none removes it",
		Description: "Beside the Queue's Concurrency Limit (both hold), and not above it. Jobs without a key are bound\n" +
			"only by the Queue's own limits.",
		UsageText: "backwave queues key-limit --db URI [--actor WHO] [--create] QUEUE N | QUEUE none",
		Flags:     []cli.Flag{dbFlag(), actorFlag(), createFlag()},
		Action: queueAction(1, func(q string, rest []string) (queueFunc, error) {
			if rest[0] == "none" {
				return func(ctx context.Context, a *backwave.Admin) (string, error) {
					return q + ": no key limit", a.RemoveKeyLimit(ctx, q)
				}, nil
			}
			n, err := strconv.Atoi(rest[0])
			if err != nil || n < 1 {
				return nil, usagef("key limit %q is not a positive integer (or give none to remove the Key Limit)", rest[0])
			}
			return func(ctx context.Context, a *backwave.Admin) (string, error) {
				return fmt.Sprintf("%s: key limit %d", q, n), a.SetKeyLimit(ctx, q, n)
			}, nil
		}),
	}
}

func keyRateCommand() *cli.Command {
	return &cli.Command{
		Name:        "key-rate",
		Usage:       "set a Queue's Key Rate: at most N starts per Concurrency Key per window of PERIOD (e.g. 10 1m); none removes it",
		Description: "The Rate Limit's window rule, kept per key. Jobs without a key are bound only by the Queue's own limits.",
		UsageText:   "backwave queues key-rate --db URI [--actor WHO] [--create] QUEUE N PERIOD | QUEUE none",
		Flags:       []cli.Flag{dbFlag(), actorFlag(), createFlag()},
		Action: rateAction("key rate", "Key Rate", func(ctx context.Context, a *backwave.Admin, q string, r backwave.QueueRate) error {
			return a.SetKeyRate(ctx, q, r)
		}),
	}
}

func fairCommand() *cli.Command {
	return &cli.Command{
		Name:        "fair",
		Usage:       "turn a Queue's Fair Claim on or off: claims take due jobs round-robin across Concurrency Keys",
		Description: "Jobs without a key take their turn as one key of their own.",
		UsageText:   "backwave queues fair --db URI [--actor WHO] [--create] QUEUE on|off",
		Flags:       []cli.Flag{dbFlag(), actorFlag(), createFlag()},
		Action: queueAction(1, func(q string, rest []string) (queueFunc, error) {
			var on bool
			switch rest[0] {
			case "on":
				on = true
			case "off":
			default:
				return nil, usagef("fair claim %q is neither on nor off", rest[0])
			}
			return func(ctx context.Context, a *backwave.Admin) (string, error) {
				return fmt.Sprintf("%s: fair claim %s", q, rest[0]), a.SetFairClaim(ctx, q, on)
			}, nil
		}),
	}
}

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show one Queue's settings and its Concurrency Keys with the most Scheduled and Running jobs",
		UsageText: "backwave queues show --db URI [--limit N] [--json] QUEUE",
		Flags:     []cli.Flag{dbFlag(), limitFlag("keys", 10, 100), jsonFlag()},
		Action:    queueShow,
	}
}

func queueShow(ctx context.Context, cmd *cli.Command) error {
	args := cmd.Args().Slice()
	if len(args) != 1 {
		return usagef("usage: %s", cmd.UsageText)
	}
	name := args[0]
	if err := validName("queue", name); err != nil {
		return err
	}
	limit, err := limitOf(cmd, 100)
	if err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	q, err := a.Queue(ctx, name)
	if err != nil {
		return err
	}
	keys, err := a.QueueKeys(ctx, name, limit)
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		type keyView struct {
			Key       string `json:"key"`
			Scheduled int    `json:"scheduled"`
			Running   int    `json:"running"`
		}
		type view struct {
			Name     string    `json:"name"`
			Paused   bool      `json:"paused"`
			Limit    int       `json:"limit"`
			Running  int       `json:"running"`
			Rate     string    `json:"rate"`
			KeyLimit int       `json:"key_limit"`
			KeyRate  string    `json:"key_rate"`
			Fair     bool      `json:"fair_claim"`
			Keys     []keyView `json:"top_keys"`
		}
		out := view{Name: q.Name, Paused: q.Paused, Limit: q.Limit, Running: q.Running, Rate: q.Rate.String(),
			KeyLimit: q.Keys.Limit, KeyRate: q.Keys.Rate.String(), Fair: q.Keys.Fair, Keys: make([]keyView, len(keys))}
		for i, k := range keys {
			out.Keys[i] = keyView(k)
		}
		return writeJSON(w, out)
	}
	dash := func(n int) string {
		if n == 0 {
			return "-"
		}
		return strconv.Itoa(n)
	}
	fmt.Fprintf(w, "queue %s\n  paused: %t\n  concurrency limit: %s\n  running: %d\n  rate limit: %s\n  key limit: %s\n  key rate: %s\n  fair claim: %t\n\n",
		q.Name, q.Paused, dash(q.Limit), q.Running, q.Rate, dash(q.Keys.Limit), q.Keys.Rate, q.Keys.Fair)
	return printTable(w, "(no keys with Scheduled or Running jobs)", "KEY\tSCHEDULED\tRUNNING", keys, func(k backwave.KeyCount) string {
		key := k.Key
		if key == "" {
			key = "(none)"
		}
		return fmt.Sprintf("%s\t%d\t%d", key, k.Scheduled, k.Running)
	})
}
