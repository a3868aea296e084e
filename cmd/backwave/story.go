package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/backwave/backwave"
)

// demoType is one of the demo's job types, in its own Queue, and the
// sentence that tells what became of its jobs.
type demoType struct {
	queue, wire string
	// tell says what became of the type's jobs, from the counts this run
	// added (waiting: the type's jobs not yet finished).
	tell func(c func(backwave.JobState) int, waiting int) string
}

// demoTypes are the demo's job types in the order the story tells them.
var demoTypes = []demoType{
	{"mail", sendEmail{}.WireName(), func(c func(backwave.JobState) int, waiting int) string {
		return fmt.Sprintf("%d succeeded at their first Attempt; %d still waiting", c(backwave.StateSucceeded), waiting)
	}},
	{"inventory", syncInventory{}.WireName(), func(c func(backwave.JobState) int, waiting int) string {
		return fmt.Sprintf("%d succeeded after failing and being retried with backoff; %d still retrying or waiting", c(backwave.StateSucceeded), waiting)
	}},
	{"billing", chargeExpiredCard{}.WireName(), func(c func(backwave.JobState) int, waiting int) string {
		return fmt.Sprintf("%d dead-lettered when their %d Attempts had all failed; %d still retrying or waiting",
			c(backwave.StateDeadLettered), demoCardAttempts, waiting)
	}},
	{"reports", buildReport{}.WireName(), func(c func(backwave.JobState) int, waiting int) string {
		return fmt.Sprintf("%d succeeded, %d cancelled while running, at most %d at a time (the Queue's Concurrency Limit); %d still waiting",
			c(backwave.StateSucceeded), c(backwave.StateCancelled), demoReportLimit, waiting)
	}},
	{"orders", orderStep{}.WireName(), func(c func(backwave.JobState) int, waiting int) string {
		return fmt.Sprintf("%d succeeded, as Workflows of %d steps (%s), each step after the one before; %d still waiting",
			c(backwave.StateSucceeded), len(demoOrderSteps), strings.Join(demoOrderSteps, ", then "), waiting)
	}},
	{"digests", inventoryDigest{}.WireName(), func(c func(backwave.JobState) int, waiting int) string {
		return fmt.Sprintf("%d succeeded, minted by the Recurring Schedule %q (%s); %d still waiting",
			c(backwave.StateSucceeded), demoSchedule.Name, demoSchedule.Cron, waiting)
	}},
}

// story is the demo's closing report: the totals, what became of each job
// type, and the commands to look inside the file.
type story struct {
	out    io.Writer
	colour palette
	path   string
	// self is how the user runs this command (selfCommand).
	self     string
	before   []backwave.QueueStateCount // the counts the file held when the demo started
	enqueued int
	// ran is how long the jobs flowed; stopped how long the graceful stop
	// took after.
	ran, stopped time.Duration
}

// tell prints the story, reading the counts after the fleet stopped.
func (s story) tell(ctx context.Context, a *backwave.Admin) error {
	now, err := a.CountByQueue(ctx)
	if err != nil {
		return err
	}
	// added[queue][state]: what this run changed.
	added := make(map[string]map[backwave.JobState]int)
	add := func(counts []backwave.QueueStateCount, sign int) {
		for _, c := range counts {
			if added[c.Queue] == nil {
				added[c.Queue] = make(map[backwave.JobState]int)
			}
			added[c.Queue][c.State] += sign * c.Count
		}
	}
	add(now, 1)
	add(s.before, -1)
	finished := 0
	for _, byState := range added {
		for st, n := range byState {
			if st.Terminal() {
				finished += n
			}
		}
	}
	w, p := s.out, s.colour
	minted := 0
	for _, n := range added["digests"] {
		minted += n
	}
	fmt.Fprintf(w, "\n%s: %d jobs enqueued and %d minted by the schedule in %s, %d finished (%.0f jobs/s); stopping gracefully took %s\n", p.bold("demo finished"),
		s.enqueued, minted, seconds(s.ran), finished, float64(finished)/s.ran.Seconds(), seconds(s.stopped))

	fmt.Fprintf(w, "\n%s\n", p.bold("what became of each job type (one Queue each):"))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range demoTypes {
		c := func(st backwave.JobState) int { return added[t.queue][st] }
		total, waiting := 0, 0
		for _, n := range added[t.queue] {
			total += n
		}
		for _, cnt := range now {
			if cnt.Queue == t.queue && !cnt.State.Terminal() {
				waiting += cnt.Count
			}
		}
		line := t.tell(c, waiting)
		if q := c(backwave.StateQuarantined); q > 0 {
			line += fmt.Sprintf("; %d quarantined", q)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%6d enqueued:\t%s\n", t.queue, t.wire, total, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	// A card charge to look at: a dead-lettered one if there is one yet.
	card, err := s.cardCharge(ctx, a)
	if err != nil {
		return err
	}
	db := shellQuote(s.path)
	fmt.Fprintf(w, "\n%s %s (the nodes' log: %s.log)\n", p.bold("the database is kept:"), s.path, s.path)
	fmt.Fprintf(w, "%s\n", p.bold("look inside it (each command runs as printed; the # lines say what it shows):"))
	bw := s.self
	lines := [][2]string{
		{"the card charges that dead-lettered", bw + " jobs list --db " + db + " --queue billing --state dead_lettered"},
		{"a card charge, with its Transition Log", fmt.Sprintf("%s jobs show --db %s %d", bw, db, card)},
		{"how many dead-lettered card charges a requeue would give fresh Attempts (drop --dry-run to requeue them: an audited Operator Action)",
			bw + " jobs requeue --db " + db + " --queue billing --state dead_lettered --all --dry-run"},
		{"every Queue's jobs by state", bw + " jobs counts --db " + db},
		{"the demo operator's cancels, in the audit trail", bw + " jobs audit --db " + db},
		{"the emails by tenant", bw + " tags facet --db " + db + " --queue mail"},
		{"the order Workflows, and the Recurring Schedule with its next occurrence", bw + " workflows list --db " + db},
		{"", bw + " schedules list --db " + db},
		{"the dashboard again, on http://127.0.0.1:8080/backwave/ (Ctrl-C stops it; --allow Requeue,Cancel lets it act)", bw + " dashboard --db " + db},
		{"or name the database once and leave out --db", "export BACKWAVE_DB=" + db},
	}
	for _, l := range lines {
		if l[0] != "" {
			fmt.Fprintf(w, "  %s\n", p.dim("# "+l[0]))
		}
		fmt.Fprintf(w, "  %s\n", l[1])
	}
	return nil
}

// seconds says d in seconds to a tenth ("0.8s", "2s"), one unit whatever
// its size, so the story reads alike from run to run.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + "s"
}

// cardCharge returns the id of the newest dead-lettered card charge, or of
// the newest card charge when none has dead-lettered yet.
func (s story) cardCharge(ctx context.Context, a *backwave.Admin) (backwave.JobID, error) {
	for _, states := range [][]backwave.JobState{{backwave.StateDeadLettered}, nil} {
		page, err := a.Jobs(ctx, backwave.JobListParams{
			JobFilter:  backwave.JobFilter{Queue: "billing", States: states},
			PageParams: backwave.PageParams{Limit: 1},
		})
		if err != nil {
			return 0, err
		}
		if len(page.Items) > 0 {
			return page.Items[0].ID, nil
		}
	}
	return 0, fmt.Errorf("demo: no card charge was enqueued")
}
