package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/backwave/backwave"
)

// progress shows the demo's live counts: redrawn in place on a terminal, a
// plain line a second otherwise.
type progress struct {
	out      io.Writer
	tty      bool
	colour   palette
	start    time.Time
	duration time.Duration
	// before are the counts the file held when the demo started; the view
	// shows what this run added.
	before map[backwave.JobState]int

	lines    int // lines drawn last time (terminal mode)
	lastDone int
	lastAt   time.Time
}

// finished counts the jobs in terminal states.
func finished(counts map[backwave.JobState]int) int {
	n := 0
	for st, c := range counts {
		if st.Terminal() {
			n += c
		}
	}
	return n
}

// run redraws until ctx is done.
func (p *progress) run(ctx context.Context, a *backwave.Admin, enqueued *counter) error {
	every := time.Second
	if p.tty {
		every = 250 * time.Millisecond
	}
	p.lastAt = p.start
	p.lastDone = finished(p.before)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		counts, err := a.CountByState(ctx, "")
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err // it says what it was reading
		}
		queues, err := a.Queues(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err // it says what it was reading
		}
		p.draw(counts, queues, enqueued.get())
	}
}

// draw renders one frame.
func (p *progress) draw(counts map[backwave.JobState]int, queues []backwave.QueueInfo, enqueued int) {
	now := time.Now()
	done := finished(counts)
	rate := float64(done-p.lastDone) / now.Sub(p.lastAt).Seconds()
	avg := float64(done-finished(p.before)) / now.Sub(p.start).Seconds()
	p.lastDone, p.lastAt = done, now
	elapsed := now.Sub(p.start).Round(time.Second)
	if !p.tty {
		fmt.Fprintf(p.out, "%4ds  enqueued=%d scheduled=%d running=%d succeeded=%d dead_lettered=%d cancelled=%d quarantined=%d  %.0f jobs/s\n",
			int(elapsed.Seconds()), enqueued, p.delta(counts, backwave.StateScheduled), p.delta(counts, backwave.StateRunning),
			p.delta(counts, backwave.StateSucceeded), p.delta(counts, backwave.StateDeadLettered), p.delta(counts, backwave.StateCancelled),
			p.delta(counts, backwave.StateQuarantined), rate)
		return
	}
	var b strings.Builder
	of := ""
	if p.duration > 0 {
		of = " of " + p.duration.String()
	}
	fmt.Fprintf(&b, "  elapsed %s%s, %d jobs enqueued\n", elapsed, of, enqueued)
	for _, st := range backwave.JobStates() {
		if st == backwave.StateAwaitingParent {
			continue
		}
		n := p.delta(counts, st)
		fmt.Fprintf(&b, "  %s %7d  %s\n", p.colour.state(st, fmt.Sprintf("%-14s", st)), n, p.colour.state(st, bar(n, enqueued)))
	}
	fmt.Fprintf(&b, "  %s %7.0f jobs/s now, %.0f jobs/s on average\n", p.colour.bold(fmt.Sprintf("%-14s", "throughput")), rate, avg)
	var qs []string
	for _, q := range queues {
		s := fmt.Sprintf("%s %d running", q.Name, q.Running)
		if q.Limit > 0 {
			s += fmt.Sprintf(" (limit %d)", q.Limit)
		}
		if q.Paused {
			s += " (paused)"
		}
		qs = append(qs, s)
	}
	fmt.Fprintf(&b, "  %s %s\n", p.colour.bold(fmt.Sprintf("%-14s", "queues")), strings.Join(qs, " · "))
	frame := b.String()
	if p.lines > 0 {
		fmt.Fprintf(p.out, "\x1b[%dA", p.lines) // back to the top of the last frame
	}
	fmt.Fprint(p.out, strings.ReplaceAll(frame, "\n", "\x1b[K\n"))
	p.lines = strings.Count(frame, "\n")
}

// delta is the count of jobs in st that this run added (the file may hold
// jobs from an earlier run).
func (p *progress) delta(counts map[backwave.JobState]int, st backwave.JobState) int {
	if st.Terminal() {
		return counts[st] - p.before[st]
	}
	return counts[st]
}

// bar draws n of total as a bar of up to 30 cells.
func bar(n, total int) string {
	if total <= 0 || n <= 0 {
		return ""
	}
	cells := min(30, max(1, n*30/total))
	return strings.Repeat("█", cells)
}

// byState sums per-Queue counts by state.
func byState(counts []backwave.QueueStateCount) map[backwave.JobState]int {
	out := make(map[backwave.JobState]int)
	for _, c := range counts {
		out[c.State] += c.Count
	}
	return out
}
