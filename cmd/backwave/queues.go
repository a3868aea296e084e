package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
)

func queuesCommand() *cli.Command {
	return &cli.Command{
		Name:      "queues",
		Usage:     "list and show Queues, pause, resume and remove them, set their Concurrency Limit, Rate Limit and key policy",
		UsageText: "backwave queues list|show|pause|resume|remove|limit|rate|key-limit|key-rate|fair --db URI …",
		Commands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list every known Queue with its settings and Running count",
				UsageText: "backwave queues list --db URI [--limit N] [--json]",
				Flags:     []cli.Flag{dbFlag(), limitFlag("Queues", 50, backwave.MaxPageLimit), jsonFlag()},
				Action:    queuesList,
			},
			{
				Name:      "pause",
				Usage:     "stop claims from a Queue (running jobs are unaffected)",
				UsageText: "backwave queues pause --db URI [--actor WHO] [--create] QUEUE",
				Flags:     []cli.Flag{dbFlag(), actorFlag(), createFlag()},
				Action: queueAction(0, func(q string, _ []string) (queueFunc, error) {
					return func(ctx context.Context, a *backwave.Admin) (string, error) {
						return "paused " + q, a.PauseQueue(ctx, q)
					}, nil
				}),
			},
			{
				Name:      "resume",
				Usage:     "let claims from a Queue start again",
				UsageText: "backwave queues resume --db URI [--actor WHO] [--create] QUEUE",
				Flags:     []cli.Flag{dbFlag(), actorFlag(), createFlag()},
				Action: queueAction(0, func(q string, _ []string) (queueFunc, error) {
					return func(ctx context.Context, a *backwave.Admin) (string, error) {
						return "resumed " + q, a.ResumeQueue(ctx, q)
					}, nil
				}),
			},
			{
				Name:  "remove",
				Usage: "remove an empty Queue (no job in any state) with all its settings",
				Description: "A Queue holding jobs is refused, finished ones included until retention purges them. A job\n" +
					"enqueued to the name later makes the Queue known again, with no settings.",
				UsageText: "backwave queues remove --db URI [--actor WHO] QUEUE",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: queueAction(0, func(q string, _ []string) (queueFunc, error) {
					return func(ctx context.Context, a *backwave.Admin) (string, error) {
						return "removed " + q, a.RemoveQueue(ctx, q)
					}, nil
				}),
			},
			{
				Name:      "limit",
				Usage:     "set a Queue's cluster-wide Concurrency Limit; 0 removes it",
				UsageText: "backwave queues limit --db URI [--actor WHO] [--create] QUEUE N",
				Flags:     []cli.Flag{dbFlag(), actorFlag(), createFlag()},
				Action: queueAction(1, func(q string, rest []string) (queueFunc, error) {
					n, err := strconv.Atoi(rest[0])
					if err != nil || n < 0 {
						return nil, usagef("limit %q is not a non-negative integer", rest[0])
					}
					msg := fmt.Sprintf("%s: concurrency limit %d", q, n)
					if n == 0 {
						msg = q + ": no concurrency limit"
					}
					return func(ctx context.Context, a *backwave.Admin) (string, error) { return msg, a.SetQueueLimit(ctx, q, n) }, nil
				}),
			},
			{
				Name:  "rate",
				Usage: "set a Queue's cluster-wide Rate Limit: at most N starts per window of PERIOD (e.g. 100 1m); none removes it",
				Description: "Windows are fixed, aligned to the store clock's epoch (a 1m Rate's windows are the clock's\n" +
					"minutes); each start counts, a retry again. Distinct from the Concurrency Limit (how many Run at\n" +
					"once): a claim takes what both allow. Nodes one release behind ignore Rates: set one only once the\n" +
					"whole fleet runs this release.",
				UsageText: "backwave queues rate --db URI [--actor WHO] [--create] QUEUE N PERIOD | QUEUE none",
				Flags:     []cli.Flag{dbFlag(), actorFlag(), createFlag()},
				Action: rateAction("rate limit", "Rate Limit", func(ctx context.Context, a *backwave.Admin, q string, r backwave.QueueRate) error {
					return a.SetQueueRate(ctx, q, r)
				}),
			},
			keyLimitCommand(),
			keyRateCommand(),
			fairCommand(),
			showCommand(),
		},
	}
}

// rateAction is the action of a command taking QUEUE N PERIOD or QUEUE
// none: it parses the rate (the zero QueueRate for none) and calls set;
// what names the setting in messages ("rate limit", "key rate"), term in
// the glossary's words ("Rate Limit", "Key Rate").
func rateAction(what, term string, set func(ctx context.Context, a *backwave.Admin, q string, r backwave.QueueRate) error) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		args := cmd.Args().Slice()
		extra := 2
		if len(args) == 2 && args[1] == "none" {
			extra = 1
		}
		return queueAction(extra, func(q string, rest []string) (queueFunc, error) {
			var r backwave.QueueRate
			if len(rest) == 2 {
				n, err := strconv.Atoi(rest[0])
				if err != nil || n < 1 {
					return nil, usagef("rate %q is not a positive integer (or give none to remove the %s)", rest[0], term)
				}
				d, err := time.ParseDuration(rest[1])
				if err != nil || d <= 0 {
					return nil, usagef("period %q is not a positive duration such as 1s, 1m or 24h", rest[1])
				}
				r = backwave.QueueRate{Limit: n, Period: d}
			}
			msg := fmt.Sprintf("%s: no %s", q, what)
			if !r.IsZero() {
				msg = fmt.Sprintf("%s: %s %d per %v", q, what, r.Limit, r.Period)
			}
			return func(ctx context.Context, a *backwave.Admin) (string, error) { return msg, set(ctx, a, q, r) }, nil
		})(ctx, cmd)
	}
}

// createFlag lets a Queue action set up a Queue the store has never seen.
func createFlag() cli.Flag {
	return &cli.BoolFlag{Name: "create", Usage: "act on a Queue the store has never seen (no job, no setting), setting it up; without it such a name is refused as a likely typo"}
}

// queueFunc performs one Operator Action on a Queue and says what it did.
type queueFunc func(ctx context.Context, a *backwave.Admin) (string, error)

// queueAction runs an action on the Queue named by the first argument, with
// extra more arguments after it, as the --actor. prepare checks the
// arguments, before the store is opened, and returns the action.
func queueAction(extra int, prepare func(queue string, rest []string) (queueFunc, error)) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		args := cmd.Args().Slice()
		if len(args) != 1+extra {
			return usagef("usage: %s", cmd.UsageText)
		}
		if err := validName("queue", args[0]); err != nil {
			return err
		}
		fn, err := prepare(args[0], args[1:])
		if err != nil {
			return err
		}
		var opts []backwave.AdminOption
		if cmd.Bool("create") {
			opts = append(opts, backwave.WithQueueSetup())
		}
		a, done, err := openAdmin(ctx, cmd, opts...)
		if err != nil {
			return err
		}
		defer done()
		msg, err := fn(ctx, a)
		if err != nil && slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), "create") }) {
			return offerCreate(err)
		}
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
	limit, err := limitOf(cmd, backwave.MaxPageLimit)
	if err != nil {
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
	backlog, err := backlogByQueue(ctx, a)
	if err != nil {
		return err
	}
	now := time.Now()
	total := len(qs)
	qs = qs[:min(limit, total)]
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		type rateView struct {
			Limit   int    `json:"limit"`
			Period  string `json:"period"`
			Started int    `json:"started_this_window"`
		}
		type view struct {
			Name    string `json:"name"`
			Paused  bool   `json:"paused"`
			Limit   int    `json:"limit"`
			Running int    `json:"running"`
			Ready   int    `json:"ready"`
			Later   int    `json:"later"`
			// ReadyAtLeast says Ready is a lower bound.
			ReadyAtLeast bool `json:"ready_at_least,omitempty"`
			// OldestReady is the age in seconds of the oldest ready job.
			OldestReady float64   `json:"oldest_ready_age_seconds"`
			Rate        *rateView `json:"rate,omitempty"`
		}
		out := make([]view, len(qs))
		for i, q := range qs {
			b := backlog[q.Name]
			out[i] = view{Name: q.Name, Paused: q.Paused, Limit: q.Limit, Running: q.Running,
				Ready: b.Ready, Later: b.Later, ReadyAtLeast: b.ReadyAtLeast, OldestReady: b.Age(now).Seconds()}
			if !q.Rate.IsZero() {
				out[i].Rate = &rateView{Limit: q.Rate.Limit, Period: q.Rate.Period.String(), Started: q.RateStarted}
			}
		}
		return writeJSON(w, out)
	}
	err = printTable(w, "(no queues)", "QUEUE\tPAUSED\tLIMIT\tRUNNING\tREADY\tLATER\tOLDEST READY\tRATE\tSTARTED THIS WINDOW", qs, func(q backwave.QueueInfo) string {
		limit, rate, started := "-", "-", "-"
		if q.Limit > 0 {
			limit = strconv.Itoa(q.Limit)
		}
		if !q.Rate.IsZero() {
			rate = fmt.Sprintf("%d/%v", q.Rate.Limit, q.Rate.Period)
			started = strconv.Itoa(q.RateStarted)
		}
		b := backlog[q.Name]
		return fmt.Sprintf("%s\t%t\t%s\t%d\t%s\t%d\t%s\t%s\t%s", q.Name, q.Paused, limit, q.Running, readyText(b), b.Later, ageText(b, now), rate, started)
	})
	if err != nil {
		return err
	}
	if total > len(qs) {
		fmt.Fprintln(w, more(cmd, len(qs), total))
	}
	return nil
}

// backlogByQueue reads Admin.Backlog keyed by Queue name.
func backlogByQueue(ctx context.Context, a *backwave.Admin) (map[string]backwave.QueueBacklog, error) {
	bs, err := a.Backlog(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]backwave.QueueBacklog, len(bs))
	for _, b := range bs {
		out[b.Queue] = b
	}
	return out, nil
}

// readyText is a Queue's ready count, "≥" before it when it is a lower
// bound (QueueBacklog.ReadyAtLeast).
func readyText(b backwave.QueueBacklog) string {
	if b.ReadyAtLeast {
		return "≥" + strconv.Itoa(b.Ready)
	}
	return strconv.Itoa(b.Ready)
}

// ageText is the age of the oldest ready job, to the second, or "-" when
// none is ready.
func ageText(b backwave.QueueBacklog, now time.Time) string {
	if b.Ready == 0 {
		return "-"
	}
	return b.Age(now).Truncate(time.Second).String()
}
