package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
)

func enqueueCommand() *cli.Command {
	return &cli.Command{
		Name:      "enqueue",
		Usage:     "insert one job (creating and migrating the store if it is missing)",
		UsageText: "backwave enqueue --db URI --wire-name NAME [--payload JSON|@FILE|-] [--raw] [--queue Q] [--max-attempts N] [--delay D] [--label TEXT]… [--tag KEY=VALUE]… [--unique KEY [--unique-for D] [--replace | --debounce D --max-wait D]] [-q]",
		Description: "Prints \"enqueued job 42 (send_email, queue default)\", or the id alone with -q. The payload is\n" +
			"the job's args: a JSON object, given inline, read from a file (@FILE) or from standard input\n" +
			"(-), up to " + strconv.Itoa(store.MaxPayloadBytes) + " bytes. Any other JSON value (a string, an array) is refused unless\n" +
			"--raw: a handler decoding args into a struct would quarantine it. A Queue the store has never\n" +
			"seen is warned about on stderr: the job waits there until a Worker Group serves that Queue.\n" +
			"--unique KEY stores the job only if no live job holds KEY (for D from its enqueue with --unique-for);\n" +
			"a held key prints the holder. --replace rewrites a Scheduled holder's payload, Tags and due time\n" +
			"instead; --debounce D moves its due time to D from now, never past --max-wait after its first\n" +
			"enqueue. A holder that is Running refuses both, and nothing is stored.",
		Flags: append([]cli.Flag{
			dbFlag(),
			&cli.StringFlag{Name: "wire-name", Usage: "the job type's Wire Name (required)"},
			&cli.StringFlag{Name: "payload", Value: "{}", Usage: "the job args: a JSON object, @FILE to read it from a file, - to read it from standard input"},
			&cli.BoolFlag{Name: "raw", Usage: "accept a payload that is valid JSON but not an object"},
			&cli.StringFlag{Name: "queue", Value: backwave.DefaultQueue, Usage: "the Queue"},
			&cli.IntFlag{Name: "max-attempts", Value: backwave.DefaultMaxAttempts, Usage: "how many Attempts the job gets before a failing one dead-letters it"},
			&cli.DurationFlag{Name: "delay", Usage: "run no earlier than this long from now"},
			&cli.StringFlag{Name: "concurrency-key", Usage: "the job's Concurrency Key (whose work it is), read by the Queue's Key Limit, Key Rate and Fair Claim"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the new job's id"},
			&cli.StringFlag{Name: "unique", Usage: "a unique key: store the job only if no live job holds it"},
			&cli.DurationFlag{Name: "unique-for", Usage: "hold the unique key for this long from the enqueue, not while the job is live"},
			&cli.BoolFlag{Name: "replace", Usage: "rewrite the Scheduled holder of the unique key with this job's payload, Tags and due time"},
			&cli.DurationFlag{Name: "debounce", Usage: "rewrite the Scheduled holder of the unique key and make it due this long from now"},
			&cli.DurationFlag{Name: "max-wait", Usage: "with --debounce: the holder is due no later than this long after its first enqueue"},
		}, tagFlags("tag the job with")...),
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
	payload, err := payloadOf(cmd)
	if err != nil {
		return err
	}
	args := rawArgs{wire: cmd.String("wire-name"), payload: payload}
	queue := cmd.String("queue")
	switch {
	case args.wire == "":
		return usagef("enqueue needs --wire-name")
	case cmd.Int("max-attempts") < 1:
		return usagef("--max-attempts %d: a job gets at least 1 Attempt", cmd.Int("max-attempts"))
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
	tags, err := tagsOf(cmd)
	if err != nil {
		return err
	}
	if len(tags) > 0 {
		opts = append(opts, backwave.WithTags(tags...))
	}
	unique, err := uniqueOf(cmd)
	if err != nil {
		return err
	}
	opts = append(opts, unique...)
	if cmd.IsSet("concurrency-key") {
		opts = append(opts, backwave.WithConcurrencyKey(cmd.String("concurrency-key")))
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
	res, err := client.EnqueueUnique(ctx, args, opts...)
	if errors.Is(err, backwave.ErrInvalidJob) {
		return usageError{err}
	} else if err != nil {
		return err
	}
	id := res.ID
	switch {
	case cmd.Bool("quiet"):
		fmt.Fprintf(cmd.Root().Writer, "%d\n", id)
	case res.Replaced:
		fmt.Fprintf(cmd.Root().Writer, "rewrote job %d, the holder of unique key %q (%s, queue %s)\n", id, cmd.String("unique"), args.wire, queue)
	case !res.Inserted:
		fmt.Fprintf(cmd.Root().Writer, "job %d holds unique key %q: nothing enqueued\n", id, cmd.String("unique"))
	default:
		fmt.Fprintf(cmd.Root().Writer, "enqueued job %d (%s, queue %s)\n", id, args.wire, queue)
	}
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
	for _, q := range known {
		names = append(names, q.Name)
	}
	mean := didYouMean(queue, names)
	if len(names) > 10 {
		names = append(names[:10], "…")
	}
	return mean + "known: " + strings.Join(names, ", "), true
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

// payloadOf reads --payload: inline JSON, @FILE or - (standard input),
// checked to be valid JSON of at most the store's payload limit, and a JSON
// object unless --raw.
func payloadOf(cmd *cli.Command) (json.RawMessage, error) {
	raw := cmd.String("payload")
	from := "--payload"
	var b []byte
	switch {
	case raw == "-":
		from = "--payload - (standard input)"
		r := cmd.Root().Reader
		if r == nil {
			r = os.Stdin
		}
		var err error
		if b, err = io.ReadAll(io.LimitReader(r, store.MaxPayloadBytes+1)); err != nil {
			return nil, fmt.Errorf("--payload -: read standard input: %w", err)
		}
	case strings.HasPrefix(raw, "@"):
		from = "--payload " + raw
		f, err := os.Open(raw[1:])
		if err != nil {
			return nil, usagef("--payload %s: %v", raw, err)
		}
		defer func() { _ = f.Close() }()
		if b, err = io.ReadAll(io.LimitReader(f, store.MaxPayloadBytes+1)); err != nil {
			return nil, fmt.Errorf("--payload %s: %w", raw, err)
		}
	default:
		b = []byte(raw)
	}
	if len(b) > store.MaxPayloadBytes {
		return nil, usagef("%s is over the store's %d-byte payload limit", from, store.MaxPayloadBytes)
	}
	if err := store.ValidateText("the payload", b); err != nil {
		return nil, usagef("%s: %v", from, err)
	}
	if !json.Valid(b) {
		return nil, usagef("%s is not valid JSON: %s", from, jsonProblem(string(b)))
	}
	if trimmed := bytes.TrimSpace(b); !cmd.Bool("raw") && (len(trimmed) == 0 || trimmed[0] != '{') {
		return nil, usagef("%s is %s, not a JSON object: job args decode into a struct, and such a job would quarantine (--raw to enqueue it anyway)",
			from, jsonKind(trimmed))
	}
	return b, nil
}

// jsonKind names the kind of a valid JSON value.
func jsonKind(b []byte) string {
	switch b[0] {
	case '"':
		return "a JSON string"
	case '[':
		return "a JSON array"
	case 't', 'f':
		return "a JSON boolean"
	case 'n':
		return "JSON null"
	}
	return "a JSON number"
}

// jsonProblem says what is wrong with text as JSON, in one line.
func jsonProblem(text string) string {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return err.Error()
	}
	return "unexpected data"
}

// uniqueOf reads --unique and the flags of its scope and mode into the
// WithUnique option, none without --unique. A flag that needs --unique (or
// --debounce) without it, or --replace with --debounce, is a usage error;
// the Client checks the durations themselves.
func uniqueOf(cmd *cli.Command) ([]backwave.EnqueueOption, error) {
	key := cmd.String("unique")
	switch {
	case key == "" && (cmd.IsSet("unique-for") || cmd.Bool("replace") || cmd.IsSet("debounce") || cmd.IsSet("max-wait")):
		return nil, usagef("--unique-for, --replace, --debounce and --max-wait need --unique")
	case cmd.Bool("replace") && cmd.IsSet("debounce"):
		return nil, usagef("--replace and --debounce are two modes; give one")
	case cmd.IsSet("max-wait") != cmd.IsSet("debounce"):
		return nil, usagef("--debounce and --max-wait go together")
	case cmd.IsSet("debounce") && cmd.IsSet("delay"):
		return nil, usagef("--debounce decides the due time; drop --delay")
	case key == "":
		return nil, nil
	}
	scope := backwave.UniqueWhileLive()
	if cmd.IsSet("unique-for") {
		scope = backwave.UniqueFor(cmd.Duration("unique-for"))
	}
	switch {
	case cmd.Bool("replace"):
		scope = scope.Replace()
	case cmd.IsSet("debounce"):
		scope = scope.Debounce(cmd.Duration("debounce"), cmd.Duration("max-wait"))
	}
	return []backwave.EnqueueOption{backwave.WithUnique(key, scope)}, nil
}
