package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
)

// bulkFlags are the flags of an Operator Action on every job a filter
// matches (requeue, cancel, delete … --all).
func bulkFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "all", Usage: "act on every job the filter flags match, not one id"},
		&cli.BoolFlag{Name: "dry-run", Usage: "with --all: print how many jobs match and how many the action applies to; change nothing"},
		&cli.StringSliceFlag{Name: "state", Usage: "with --all: keep jobs in this state (repeatable or comma-separated): " + stateNames()},
		&cli.StringFlag{Name: "queue", Usage: "with --all: keep jobs of this Queue"},
		&cli.StringFlag{Name: "wire-name", Usage: "with --all: keep jobs of this Wire Name"},
		&cli.IntFlag{Name: "limit", Value: backwave.DefaultBulkLimit,
			Usage: fmt.Sprintf("with --all: the most jobs to act on in this run (1 to %d); repeat the command for more", backwave.MaxBulkLimit)},
		&cli.Int64Flag{Name: "before", Usage: "with --all: go on below this job id (the cursor a cut run printed)"},
		jsonFlag(),
	}, tagFlags("with --all: keep jobs carrying")...)
}

// bulkOnly are the bulkFlags that mean nothing without --all.
var bulkOnly = []string{"dry-run", "state", "queue", "wire-name", "label", "tag", "limit", "before", "json"}

// bulkOr runs the Operator Action one on the one job id argument, or, with
// --all, action on every job the filter flags match. Neither an id nor
// --all is a usage error, and so are both, and a filter flag without
// --all.
func bulkOr(action backwave.BulkAction, one cli.ActionFunc) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		if !cmd.Bool("all") {
			for _, name := range bulkOnly {
				if cmd.IsSet(name) {
					return usagef("--%s needs --all (%s of every matching job)", name, action)
				}
			}
			if cmd.Args().Len() == 0 {
				return usagef("%s takes one job id, or --all with filter flags (--state, --queue, --wire-name, --label, --tag); --dry-run previews", cmd.FullName())
			}
			return one(ctx, cmd)
		}
		if cmd.Args().Len() > 0 {
			return usagef("%s --all takes no job id, got %q", cmd.FullName(), cmd.Args().Slice())
		}
		return bulkRun(ctx, cmd, action)
	}
}

// bulkRun previews (--dry-run) or performs action on the jobs the filter
// flags match.
func bulkRun(ctx context.Context, cmd *cli.Command, action backwave.BulkAction) error {
	f := backwave.JobFilter{Queue: cmd.String("queue"), WireName: cmd.String("wire-name")}
	if err := validFilter(f); err != nil {
		return err
	}
	var err error
	if f.States, err = statesOf(cmd); err != nil {
		return err
	}
	if f.Tags, err = tagsOf(cmd); err != nil {
		return err
	}
	limit, err := limitOf(cmd, backwave.MaxBulkLimit)
	if err != nil {
		return err
	}
	before := cmd.Int64("before")
	if before < 0 {
		return usagef("--before %d is negative", before)
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	w := cmd.Root().Writer
	if cmd.Bool("dry-run") {
		p, err := a.PreviewMatching(ctx, action, f)
		if err != nil {
			return err
		}
		if cmd.Bool("json") {
			return writeJSON(w, struct {
				Matched    int  `json:"matched"`
				Applicable int  `json:"applicable"`
				AtLeast    bool `json:"at_least,omitempty"`
			}{p.Matched, p.Applicable, p.AtLeast})
		}
		atLeast := ""
		if p.AtLeast {
			atLeast = "at least "
		}
		fmt.Fprintf(w, "%s: %s%s match, %s%d can be %s (dry run: nothing changed)\n",
			action, atLeast, plural(p.Matched, "job"), atLeast, p.Applicable, pastTense(action))
		return nil
	}
	res, err := a.Matching(ctx, action, f, backwave.BulkOptions{Limit: limit, Before: backwave.Cursor(before)})
	if res.Acted > 0 || res.Skipped > 0 || err == nil {
		if perr := printBulk(cmd, action, res); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

// printBulk prints what one bulk run did.
func printBulk(cmd *cli.Command, action backwave.BulkAction, res backwave.BulkResult) error {
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		type skip struct {
			Reason string `json:"reason"`
			Jobs   int    `json:"jobs"`
		}
		out := struct {
			Acted   int    `json:"acted"`
			Skipped int    `json:"skipped"`
			Skips   []skip `json:"skips,omitempty"`
			More    bool   `json:"more"`
			Next    int64  `json:"next,omitempty"`
		}{Acted: res.Acted, Skipped: res.Skipped, More: res.More, Next: int64(res.Next)}
		for _, s := range res.Skips {
			out.Skips = append(out.Skips, skip{s.Reason, s.Jobs})
		}
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "%s %s, skipped %d\n", pastTense(action), plural(res.Acted, "job"), res.Skipped)
	for _, s := range res.Skips {
		fmt.Fprintf(w, "  %d  %s\n", s.Jobs, s.Reason)
	}
	if res.More {
		fmt.Fprintf(w, "(more: repeat the command, or add --before %d to go on past the jobs this run examined)\n", res.Next)
	}
	return nil
}

// pastTense is action's past participle: "requeued", "cancelled",
// "deleted".
func pastTense(action backwave.BulkAction) string {
	switch action {
	case backwave.BulkRequeue:
		return "requeued"
	case backwave.BulkCancel:
		return "cancelled"
	case backwave.BulkDelete:
		return "deleted"
	}
	return action.String()
}

// plural is "1 job", "2 jobs".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
