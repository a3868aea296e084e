package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
)

func enqueueCommand() *cli.Command {
	return &cli.Command{
		Name:      "enqueue",
		Usage:     "insert one job (creating and migrating the store if it is missing)",
		UsageText: "backwave enqueue --db URI --wire-name NAME [--payload JSON] [--queue Q] [--max-attempts N] [--delay D] [--tag T]…",
		Description: "Prints the new job's id. The payload must be valid JSON (BackWave stores job args as JSON).\n" +
			"A tag is a Label (urgent) or a Keyed Tag (tenant=acme). A Queue the store has never seen is\n" +
			"warned about on stderr: the job waits there until a Worker Group serves that Queue.",
		Flags: []cli.Flag{
			dbFlag(),
			&cli.StringFlag{Name: "wire-name", Usage: "the job type's Wire Name (required)"},
			&cli.StringFlag{Name: "payload", Value: "{}", Usage: "the job args as JSON"},
			&cli.StringFlag{Name: "queue", Value: backwave.DefaultQueue, Usage: "the Queue"},
			&cli.IntFlag{Name: "max-attempts", Value: backwave.DefaultMaxAttempts, Usage: "the attempt budget"},
			&cli.DurationFlag{Name: "delay", Usage: "run no earlier than this long from now"},
			&cli.StringSliceFlag{Name: "tag", Usage: "a tag: LABEL or KEY=VALUE (repeatable)"},
		},
		Action: enqueue,
	}
}

// rawArgs are a job's args as the command line gives them: a Wire Name and
// JSON. A handler's args type has a constant Wire Name; these only enqueue.
type rawArgs struct {
	wire    string
	payload json.RawMessage
}

func (a rawArgs) WireName() string { return a.wire }

func (a rawArgs) MarshalJSON() ([]byte, error) { return a.payload, nil }

func enqueue(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	// Check everything that needs no store before anything is created.
	args := rawArgs{wire: cmd.String("wire-name"), payload: json.RawMessage(cmd.String("payload"))}
	queue := cmd.String("queue")
	switch {
	case args.wire == "":
		return usagef("enqueue needs --wire-name")
	case !json.Valid(args.payload):
		return usagef("--payload is not valid JSON: %s", jsonProblem(string(args.payload)))
	case cmd.Int("max-attempts") < 1:
		return usagef("--max-attempts %d: the attempt budget is at least 1", cmd.Int("max-attempts"))
	case cmd.Duration("delay") < 0:
		return usagef("--delay %v is negative", cmd.Duration("delay"))
	}
	if err := errors.Join(validName("wire name", args.wire), validName("queue", queue)); err != nil {
		return err
	}
	opts := []backwave.EnqueueOption{backwave.WithQueue(queue), backwave.WithMaxAttempts(cmd.Int("max-attempts"))}
	if d := cmd.Duration("delay"); d > 0 {
		opts = append(opts, backwave.WithDelay(d))
	}
	var tags []backwave.Tag
	for _, raw := range cmd.StringSlice("tag") {
		t := parseTag(raw)
		if err := t.Validate(); err != nil {
			return usageError{err}
		}
		tags = append(tags, t)
	}
	if len(tags) > 0 {
		opts = append(opts, backwave.WithTags(tags...))
	}

	t, err := targetOf(cmd)
	if err != nil {
		return err
	}
	s, created, err := openCreating(ctx, t)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	stderr := cmd.Root().ErrWriter
	switch {
	case len(created.applied) > 0 && created.from == 0:
		fmt.Fprintf(stderr, "backwave: created %s at schema version %d\n", created.where, created.to)
	case len(created.applied) > 0:
		fmt.Fprintf(stderr, "backwave: %s\n", created)
	}
	actor, err := actorOf(cmd)
	if err != nil {
		return err
	}
	admin, err := backwave.NewAdmin(s, actor)
	if err != nil {
		return err
	}
	known, err := admin.Queues(ctx)
	if err != nil {
		return err
	}
	client, err := backwave.NewClient(s, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	id, err := client.Enqueue(ctx, args, opts...)
	if errors.Is(err, backwave.ErrInvalidJob) {
		return usageError{err}
	} else if err != nil {
		return err
	}
	fmt.Fprintf(cmd.Root().Writer, "%d\n", id)
	if hint, unseen := unseenQueue(queue, known); unseen {
		fmt.Fprintf(stderr, "backwave: warning: job %d went to Queue %q, which this store had never seen (%s); "+
			"it waits until a Worker Group serves that Queue\n", id, queue, hint)
	}
	return nil
}

// unseenQueue reports whether the store knows Queues but not queue, with a
// hint: the known Queues, and the one queue most likely meant. A store that
// knows no Queue yet gets no warning: every Queue is new to it.
func unseenQueue(queue string, known []backwave.QueueInfo) (hint string, unseen bool) {
	if len(known) == 0 || slices.ContainsFunc(known, func(q backwave.QueueInfo) bool { return q.Name == queue }) {
		return "", false
	}
	names := make([]string, 0, len(known))
	best, bestDist := "", 3 // suggest only a name within two edits
	for _, q := range known {
		names = append(names, q.Name)
		if d := editDistance(queue, q.Name); d < bestDist {
			best, bestDist = q.Name, d
		}
	}
	if len(names) > 10 {
		names = append(names[:10], "…")
	}
	hint = "known: " + strings.Join(names, ", ")
	if best != "" {
		hint = fmt.Sprintf("did you mean %q? %s", best, hint)
	}
	return hint, true
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// jsonProblem says what is wrong with text as JSON, in one line.
func jsonProblem(text string) string {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return err.Error()
	}
	return "unexpected data"
}
