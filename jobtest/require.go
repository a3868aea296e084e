package jobtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
)

// The Require helpers read the Client's store the way the Monitor does
// (backwave.Admin) and fail the test with t.Fatalf, saying what they found,
// when it is not what the test wants. Each reads the store at the current
// Virtual Time and changes nothing.

// RequireEnqueued requires a stored job of want's Wire Name whose args
// encode to the same JSON value as want, and returns the newest such job.
// Jobs minted by Recurring Schedules and enqueued by handlers count as well
// as the test's own; state does not matter.
func RequireEnqueued[T backwave.JobArgs](t testing.TB, c *Client, want T) backwave.JobInfo {
	t.Helper()
	wire := want.WireName()
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("jobtest: RequireEnqueued: encode %T: %v", want, err)
		return backwave.JobInfo{}
	}
	jobs, err := c.jobs(backwave.JobFilter{WireName: wire})
	if err != nil {
		t.Fatalf("jobtest: RequireEnqueued: %v", err)
		return backwave.JobInfo{}
	}
	for _, j := range jobs {
		if sameJSON(j.Payload, wantJSON) {
			return j
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "jobtest: RequireEnqueued: no job of wire name %q with args %s", wire, wantJSON)
	if len(jobs) == 0 {
		b.WriteString("; no job of that wire name is stored")
	} else {
		fmt.Fprintf(&b, "; the %d stored with that wire name, newest first:", len(jobs))
		for i, j := range jobs {
			if i == 10 {
				fmt.Fprintf(&b, "\n\t… and %d more", len(jobs)-i)
				break
			}
			fmt.Fprintf(&b, "\n\tjob %d (%s): %s", j.ID, j.State, j.Payload)
		}
	}
	t.Fatalf("%s", b.String())
	return backwave.JobInfo{}
}

// RequireState requires the job to be in state want and returns it.
func RequireState(t testing.TB, c *Client, id backwave.JobID, want backwave.JobState) backwave.JobInfo {
	t.Helper()
	d, err := c.admin.Job(context.Background(), id)
	if err != nil {
		t.Fatalf("jobtest: RequireState: job %d: %v", id, err)
		return backwave.JobInfo{}
	}
	if d.Job.State != want {
		t.Fatalf("jobtest: RequireState: job %d is %s, want %s (at %s); its Transition Log:\n%s",
			id, d.Job.State, want, c.Now().Format(time.RFC3339), renderLog(d.Transitions))
		return d.Job
	}
	return d.Job
}

// RequireOutput requires the job's Job Output to be want, byte for byte
// (nil and empty are the same: no output).
func RequireOutput(t testing.TB, c *Client, id backwave.JobID, want []byte) {
	t.Helper()
	d, err := c.admin.Job(context.Background(), id)
	if err != nil {
		t.Fatalf("jobtest: RequireOutput: job %d: %v", id, err)
		return
	}
	if !bytes.Equal(d.Output, want) {
		t.Fatalf("jobtest: RequireOutput: job %d (%s) has output %q, want %q", id, d.Job.State, d.Output, want)
	}
}

// RequireCursor requires the job's stored Cursor (Job.SaveCursor) to be
// want as JSON (equal once decoded, so spacing and key order do not
// matter), saved by Attempt attempt; a nil want requires that the job has
// none. It reads what the store holds: a save travels with the next
// renewal of the Attempt's Lease (a heartbeat of Virtual Time) or with the
// Attempt's outcome.
func RequireCursor(t testing.TB, c *Client, id backwave.JobID, attempt backwave.Attempt, want []byte) {
	t.Helper()
	d, err := c.admin.Job(context.Background(), id)
	if err != nil {
		t.Fatalf("jobtest: RequireCursor: job %d: %v", id, err)
		return
	}
	got := d.Job.Cursor
	switch {
	case want == nil && got == nil:
	case want == nil:
		t.Fatalf("jobtest: RequireCursor: job %d (%s) has the Cursor %s of Attempt %d, want none", id, d.Job.State, got.Value, got.Attempt)
	case got == nil:
		t.Fatalf("jobtest: RequireCursor: job %d (%s) has no Cursor, want %s of Attempt %d", id, d.Job.State, want, attempt)
	case got.Attempt != attempt || !sameJSON(got.Value, want):
		t.Fatalf("jobtest: RequireCursor: job %d (%s) has the Cursor %s of Attempt %d, want %s of Attempt %d", id, d.Job.State, got.Value, got.Attempt, want, attempt)
	}
}

// Step is one entry RequireTransitions expects in a job's Transition Log.
// State, Via and Attempt must match exactly; At and Detail only when set.
type Step struct {
	// State is the state the job moved to.
	State backwave.JobState
	// Via is what moved it.
	Via backwave.Via
	// Attempt is the job's Attempt after the change (0 for the insert).
	Attempt backwave.Attempt
	// At, if not zero, is the Virtual Time the entry must carry.
	At time.Time
	// Detail, if not empty, must be part of the entry's Failure Detail.
	Detail string
}

// String renders the step as RequireTransitions prints it.
func (s Step) String() string {
	out := fmt.Sprintf("%-16s via %-14s attempt %d", s.State, s.Via, s.Attempt)
	if !s.At.IsZero() {
		out += " at " + s.At.Format(time.RFC3339Nano)
	}
	if s.Detail != "" {
		out += fmt.Sprintf(" detail ⊇ %q", s.Detail)
	}
	return out
}

// RequireTransitions requires the job's whole Transition Log, oldest entry
// first, to match want entry by entry (see Step). On a mismatch it prints
// both logs and the first entry that differs.
func RequireTransitions(t testing.TB, c *Client, id backwave.JobID, want ...Step) {
	t.Helper()
	d, err := c.admin.Job(context.Background(), id)
	if err != nil {
		t.Fatalf("jobtest: RequireTransitions: job %d: %v", id, err)
		return
	}
	got := d.Transitions
	bad := -1
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || !matches(got[i], want[i]) {
			bad = i
			break
		}
	}
	if bad < 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "jobtest: RequireTransitions: job %d: entry %d differs (got %d entries, want %d)\ngot:\n%s\nwant:\n",
		id, bad, len(got), len(want), renderLog(got))
	for i, s := range want {
		fmt.Fprintf(&b, "\t%d  %s\n", i, s)
	}
	t.Fatalf("%s", b.String())
}

func matches(got backwave.Transition, want Step) bool {
	return got.State == want.State && got.Via == want.Via && got.Attempt == want.Attempt &&
		(want.At.IsZero() || got.At.Equal(want.At)) &&
		(want.Detail == "" || strings.Contains(got.FailureDetail, want.Detail))
}

func renderLog(log []backwave.Transition) string {
	var b strings.Builder
	for i, tr := range log {
		fmt.Fprintf(&b, "\t%d  %-16s via %-14s attempt %d at %s", i, tr.State, tr.Via, tr.Attempt, tr.At.Format(time.RFC3339Nano))
		if tr.FailureDetail != "" {
			first, _, _ := strings.Cut(tr.FailureDetail, "\n")
			fmt.Fprintf(&b, " detail %q", first)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// jobs lists every job matching f, newest first.
func (c *Client) jobs(f backwave.JobFilter) ([]backwave.JobInfo, error) {
	var out []backwave.JobInfo
	p := backwave.JobListParams{JobFilter: f, PageParams: backwave.PageParams{Limit: backwave.MaxPageLimit}}
	for {
		page, err := c.admin.Jobs(context.Background(), p)
		if errors.Is(err, backwave.ErrNotFound) {
			return nil, nil // a Queue or Wire Name the store does not know: no job, which the caller says in its own words
		}
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == 0 {
			return out, nil
		}
		p.Before = page.Next
	}
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// RequireSnoozed requires the job to have been snoozed exactly want times
// (its handler returned backwave.Snooze and the snooze was applied without
// charging the Attempt): JobInfo.Snoozes is want and the Transition Log
// holds want entries via snooze (fewer only when the log reached its cap
// and dropped the oldest, or records nothing under the Job History Policy
// off). It returns the job. A Snooze past the snooze cap is charged like
// a failure and is not counted here: it is a retry in the log.
func RequireSnoozed(t testing.TB, c *Client, id backwave.JobID, want int) backwave.JobInfo {
	t.Helper()
	d, err := c.admin.Job(context.Background(), id)
	if err != nil {
		t.Fatalf("jobtest: RequireSnoozed: job %d: %v", id, err)
		return backwave.JobInfo{}
	}
	logged := 0
	for _, tr := range d.Transitions {
		if tr.Via == backwave.ViaSnooze {
			logged++
		}
	}
	partial := len(d.Transitions) == 0 || len(d.Transitions) >= store.TransitionLogCap
	if d.Job.Snoozes != want || logged > want || (logged < want && !partial) {
		t.Fatalf("jobtest: RequireSnoozed: job %d counts %d snoozes with %d in its Transition Log, want %d (at %s); its Transition Log:\n%s",
			id, d.Job.Snoozes, logged, want, c.Now().Format(time.RFC3339), renderLog(d.Transitions))
	}
	return d.Job
}
