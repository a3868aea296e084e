package node

// Driver scripts: data-driven tests in the style of etcd-io/raft's
// interaction tests. Each file in testdata/ is a sequence of blocks:
//
//	directive args...
//	----
//	expected output
//
// separated by blank lines. Lines starting with # are comments. The output
// of a step is the commands the Driver emitted, one per line. Run with
// -rewrite to regenerate the expected output in place.
//
// Directives:
//
//	config pool=N policy=strict:a,b|weighted:a=3,b=1 [max-claim=N] [max-outcome=N]
//	       [lease=D] [maintenance=D] [expire-batch=N] [retry=initial,max,mult,jitter]
//	       [schedules] [lookahead=D] [missed-after=D] [retention=KEEP/KEEP/BATCH]
//	       [timeout=D] [grace=D] [timeouts=WIRE=D,...]
//	poll [t=D]                    Poll at virtual time t (default: unchanged)
//	heartbeat [t=D]
//	claimed op=N [jobs=ID@queue[:attempt[:max]][/wire][!],...] [reopen=D] [error]
//	       (wire defaults to noop; ! = cancel requested; reopen: a spent
//	       Rate Limit's window reopens after D)
//	renewed op=N [lost=ID,...] [cancel=ID,...] [error]   (others renewed)
//	done job=ID result=succeeded|failed|permanent|unroutable [attempt=N]
//	reported op=N [stale=ID,...] [error|invalid]          (others applied)
//	expired op=N n=N [error]
//	loaded op=N store=D [schedules=NAME@CURSOR:SPEC[:flag,...];...] [error]
//	       (SPEC with _ for spaces; CURSOR and store as offsets from the epoch;
//	       flags: coalesce nooverlap live paused rev=N zone=Area/City badzone)
//	minted op=N [jobs=QUEUE:now|later,...] [error]
//	purged op=N n=N [error]
//	stop / drain-timeout
//	state                          prints free capacity and what is held

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of Driver scripts")

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Parallel()
			runScript(t, file)
		})
	}
}

type block struct {
	line      int
	comment   []string // the comment lines before the directive
	directive string
	want      string
}

func parseScript(t *testing.T, file string) []block {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks []block
		cur    *block
		inWant bool
		want   []string
		notes  []string
		n      int
	)
	end := func() {
		if cur != nil {
			cur.want = strings.Join(want, "\n")
			blocks = append(blocks, *cur)
		}
		cur, inWant, want = nil, false, nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case inWant && line == "":
			end()
		case inWant:
			want = append(want, line)
		case strings.HasPrefix(line, "#"):
			notes = append(notes, line)
		case strings.TrimSpace(line) == "":
			// spacing
		case line == "----":
			if cur == nil {
				t.Fatalf("%s:%d: ---- without a directive", file, n)
			}
			inWant = true
		default:
			if cur != nil {
				t.Fatalf("%s:%d: directive %q has no ---- line", file, n, cur.directive)
			}
			cur = &block{line: n, directive: line, comment: notes}
			notes = nil
		}
	}
	end()
	return blocks
}

// env is the state a script drives.
type env struct {
	d   *Driver
	now time.Time
	// attempts remembers the executing Attempt per job for `done`.
	attempts map[job.ID]job.Attempt
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func runScript(t *testing.T, file string) {
	blocks := parseScript(t, file)
	e := &env{now: epoch, attempts: map[job.ID]job.Attempt{}}
	var rewritten strings.Builder
	for _, b := range blocks {
		got, err := e.run(b.directive)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", file, b.line, b.directive, err)
		}
		if *rewrite {
			if len(b.comment) > 0 {
				rewritten.WriteString(strings.Join(b.comment, "\n") + "\n")
			}
			fmt.Fprintf(&rewritten, "%s\n----\n%s\n\n", b.directive, got)
			continue
		}
		if got != b.want {
			t.Errorf("%s:%d: %s\n--- got:\n%s\n--- want:\n%s", file, b.line, b.directive, got, b.want)
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(rewritten.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *env) run(directive string) (string, error) {
	fields := strings.Fields(directive)
	verb, args := fields[0], parseArgs(fields[1:])
	if v, ok := args["t"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return "", err
		}
		e.now = epoch.Add(d)
	}
	_, failed := args["error"]
	var errStore error
	if failed {
		errStore = fmt.Errorf("store unavailable")
	}
	if _, invalid := args["invalid"]; invalid {
		failed, errStore = true, fmt.Errorf("report: %w", store.ErrInvalidParams)
	}
	var ev Event
	switch verb {
	case "config":
		if err := e.configure(args); err != nil {
			return "", err
		}
		return "ok", nil
	case "state":
		return e.state(), nil
	case "poll":
		ev = Poll{Now: e.now}
	case "hint":
		ev = Hint{Now: e.now}
	case "heartbeat":
		ev = Heartbeat{Now: e.now}
	case "stop":
		ev = Stop{Now: e.now}
	case "drain-timeout":
		ev = DrainTimeout{Now: e.now}
	case "claimed":
		jobs, err := parseJobs(args["jobs"])
		if err != nil {
			return "", err
		}
		var reopen time.Duration
		if v, ok := args["reopen"]; ok {
			reopen = dur(v)
		}
		ev = ClaimDone{Now: e.now, Op: OpID(atoi(args["op"])), Jobs: jobs, Reopen: reopen, Err: errStore}
	case "renewed":
		lost, cancel := idSet(args["lost"]), idSet(args["cancel"])
		var res []store.RenewResult
		for _, l := range e.d.Executing() {
			st := store.RenewRenewed
			if lost[l.ID] {
				st = store.RenewLost
			} else if cancel[l.ID] {
				st = store.RenewCancelRequested
			}
			res = append(res, store.RenewResult{Lease: l, Status: st})
		}
		if failed {
			res = nil
		}
		ev = RenewDone{Now: e.now, Op: OpID(atoi(args["op"])), Results: res, Err: errStore}
	case "done":
		id := job.ID(atoi(args["job"]))
		attempt := e.attempts[id]
		if a, ok := args["attempt"]; ok {
			attempt = job.Attempt(atoi(a))
		}
		r, err := parseResult(args["result"])
		if err != nil {
			return "", err
		}
		ev = JobDone{Now: e.now, Lease: job.Lease{ID: id, Attempt: attempt}, Result: r, Snooze: dur(args["snooze"])}
	case "reported":
		op := OpID(atoi(args["op"]))
		stale := idSet(args["stale"])
		var res []store.ReportResult
		for _, o := range e.d.reporting[op] {
			res = append(res, store.ReportResult{Lease: o.Lease, Applied: !stale[o.Lease.ID]})
		}
		if failed {
			res = nil
		}
		ev = ReportDone{Now: e.now, Op: op, Results: res, Err: errStore}
	case "expired":
		ev = ExpireDone{Now: e.now, Op: OpID(atoi(args["op"])), Expired: atoi(args["n"]), Err: errStore}
	case "loaded":
		scheds, err := parseSchedules(args["schedules"])
		if err != nil {
			return "", err
		}
		ev = SchedulesLoaded{Now: e.now, Op: OpID(atoi(args["op"])), StoreNow: epoch.Add(dur(args["store"])), Schedules: scheds, Err: errStore}
	case "minted":
		var jobs []store.MintedJob
		if args["jobs"] != "" {
			for _, part := range strings.Split(args["jobs"], ",") {
				q, when, _ := strings.Cut(part, ":")
				jobs = append(jobs, store.MintedJob{Queue: q, DueNow: when == "now"})
			}
		}
		res := []store.MintResult{{Schedule: "s", Applied: true, Jobs: jobs}}
		if failed {
			res = nil
		}
		ev = MintDone{Now: e.now, Op: OpID(atoi(args["op"])), Results: res, Err: errStore}
	case "purged":
		ev = PurgeDone{Now: e.now, Op: OpID(atoi(args["op"])), Purged: atoi(args["n"]), Err: errStore}
	default:
		return "", fmt.Errorf("unknown directive %q", verb)
	}
	if e.d == nil {
		return "", fmt.Errorf("no config before %q", verb)
	}
	cmds := e.d.Step(ev, nil)
	lines := make([]string, 0, len(cmds))
	for _, c := range cmds {
		if x, ok := c.(Execute); ok {
			e.attempts[x.Job.ID] = x.Job.Attempt
		}
		lines = append(lines, c.String())
	}
	if len(lines) == 0 {
		return "(no commands)", nil
	}
	return strings.Join(lines, "\n"), nil
}

func (e *env) configure(args map[string]string) error {
	cfg := Config{
		Worker:              "w1",
		PoolSize:            atoi(args["pool"]),
		MaxClaimBatch:       atoi(args["max-claim"]),
		MaxOutcomeBatch:     atoi(args["max-outcome"]),
		ExpireBatch:         atoi(args["expire-batch"]),
		LeaseDuration:       dur(args["lease"]),
		MaintenanceInterval: dur(args["maintenance"]),
		RetryPolicy:         core.RetryPolicy{Initial: time.Second, Max: time.Minute, Multiplier: 2},
		MintLookahead:       dur(args["lookahead"]),
		MissedAfter:         dur(args["missed-after"]),
		AttemptTimeout:      dur(args["timeout"]),
		AttemptTimeoutGrace: dur(args["grace"]),
	}
	if v, ok := args["snooze-cap"]; ok {
		cfg.SnoozeCap = atoi(v)
	}
	if cs, ok := args["snooze-caps"]; ok {
		cfg.SnoozeCaps = map[string]int{}
		for _, part := range strings.Split(cs, ",") {
			wire, n, _ := strings.Cut(part, "=")
			cfg.SnoozeCaps[wire] = atoi(n)
		}
	}
	if ts, ok := args["timeouts"]; ok {
		cfg.AttemptTimeouts = map[string]time.Duration{}
		for _, part := range strings.Split(ts, ",") {
			wire, d, _ := strings.Cut(part, "=")
			cfg.AttemptTimeouts[wire] = dur(d)
		}
	}
	_, cfg.Schedules = args["schedules"]
	if r, ok := args["retention"]; ok {
		f := strings.Split(r, "/")
		if len(f) != 3 {
			return fmt.Errorf("retention %q: want KEEP/KEEP/BATCH", r)
		}
		cfg.Retention = &RetentionPolicy{KeepSucceeded: dur(f[0]), KeepDeadLettered: dur(f[1]), Batch: atoi(f[2])}
	}
	kind, spec, _ := strings.Cut(args["policy"], ":")
	switch kind {
	case "strict":
		cfg.Policy = Strict(strings.Split(spec, ",")...)
	case "weighted":
		var qs []QueueWeight
		for _, part := range strings.Split(spec, ",") {
			q, w, _ := strings.Cut(part, "=")
			qs = append(qs, QueueWeight{Queue: q, Weight: atoi(w)})
		}
		cfg.Policy = Weighted(qs...)
	default:
		return fmt.Errorf("policy %q", args["policy"])
	}
	d, err := New(cfg)
	if err != nil {
		return err
	}
	e.d = d
	return nil
}

func (e *env) state() string {
	d := e.d
	var held []string
	for _, l := range d.Executing() {
		held = append(held, "exec:"+l.String())
	}
	for _, l := range d.TimedOut() {
		held = append(held, "timed-out:"+l.String())
	}
	for _, o := range d.buffer {
		held = append(held, "buffered:"+o.Lease.String())
	}
	ops := make([]OpID, 0, len(d.reporting))
	for op := range d.reporting {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	for _, op := range ops {
		for _, o := range d.reporting[op] {
			held = append(held, fmt.Sprintf("reporting(op=%d):%s", op, o.Lease))
		}
	}
	s := fmt.Sprintf("free=%d held=%d pending-poll=%t", d.Free(), d.Held(), d.pendingPoll)
	if d.wrr != nil {
		s += fmt.Sprintf(" credits=%v", d.wrr.credits)
	}
	if d.Stopping() {
		s += fmt.Sprintf(" drained=%t", d.Drained())
	}
	if len(held) > 0 {
		s += "\n" + strings.Join(held, " ")
	}
	return s
}

func parseArgs(fields []string) map[string]string {
	m := make(map[string]string, len(fields))
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

func parseJobs(s string) ([]job.Job, error) {
	if s == "" {
		return nil, nil
	}
	var jobs []job.Job
	for _, part := range strings.Split(s, ",") {
		idq, rest, ok := strings.Cut(part, "@")
		if !ok {
			return nil, fmt.Errorf("job %q: want ID@queue[:attempt[:max[:snoozes]]]", part)
		}
		cancel := strings.HasSuffix(rest, "!")
		rest, wire, ok := strings.Cut(strings.TrimSuffix(rest, "!"), "/")
		if !ok {
			wire = "noop"
		}
		f := strings.Split(rest, ":")
		j := job.Job{ID: job.ID(atoi(idq)), Queue: f[0], WireName: wire, State: job.StateRunning, Attempt: 1, MaxAttempts: 3, CancelRequested: cancel}
		if len(f) > 1 {
			j.Attempt = job.Attempt(atoi(f[1]))
		}
		if len(f) > 2 {
			j.MaxAttempts = atoi(f[2])
		}
		if len(f) > 3 {
			j.Snoozes = atoi(f[3])
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// parseSchedules reads NAME@CURSOR:SPEC[:flag,...];... into loaded
// schedules (revision 1, zone UTC unless a flag says otherwise).
func parseSchedules(s string) ([]LoadedSchedule, error) {
	var out []LoadedSchedule
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ";") {
		name, rest, ok := strings.Cut(part, "@")
		if !ok {
			return nil, fmt.Errorf("schedule %q: want NAME@CURSOR:SPEC[:flags]", part)
		}
		f := strings.SplitN(rest, ":", 3)
		if len(f) < 2 {
			return nil, fmt.Errorf("schedule %q: want NAME@CURSOR:SPEC[:flags]", part)
		}
		ls := LoadedSchedule{Location: time.UTC, Schedule: store.Schedule{
			ScheduleDef: store.ScheduleDef{Name: name, Spec: strings.ReplaceAll(f[1], "_", " ")},
			Revision:    1,
			Cursor:      epoch.Add(dur(f[0])),
		}}
		if len(f) == 3 {
			for _, flag := range strings.Split(f[2], ",") {
				k, v, _ := strings.Cut(flag, "=")
				switch k {
				case "coalesce":
					ls.Schedule.CatchUp = core.CatchUpCoalesce
				case "nooverlap":
					ls.Schedule.NoOverlap = true
				case "live":
					ls.Schedule.InstanceLive = true
				case "paused":
					ls.Schedule.Paused = true
				case "rev":
					ls.Schedule.Revision = int64(atoi(v))
				case "zone":
					loc, err := time.LoadLocation(v)
					if err != nil {
						return nil, err
					}
					ls.Location = loc
				case "badzone":
					ls.Location = nil
				default:
					return nil, fmt.Errorf("schedule %q: unknown flag %q", name, flag)
				}
			}
		}
		out = append(out, ls)
	}
	return out, nil
}

func parseResult(s string) (core.Result, error) {
	switch s {
	case "succeeded":
		return core.ResultSucceeded, nil
	case "failed":
		return core.ResultFailed, nil
	case "permanent":
		return core.ResultFailedPermanently, nil
	case "unroutable":
		return core.ResultUnroutable, nil
	case "undecodable":
		return core.ResultUndecodable, nil
	case "snoozed":
		return core.ResultSnoozed, nil
	}
	return 0, fmt.Errorf("result %q", s)
}

func idSet(s string) map[job.ID]bool {
	m := map[job.ID]bool{}
	if s == "" {
		return m
	}
	for _, p := range strings.Split(s, ",") {
		m[job.ID(atoi(p))] = true
	}
	return m
}

func atoi(s string) int {
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("bad number %q", s))
	}
	return n
}

func dur(s string) time.Duration {
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(fmt.Sprintf("bad duration %q", s))
	}
	return d
}
