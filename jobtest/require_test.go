package jobtest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
	"github.com/backwave/backwave/vtime"
)

type note struct {
	Text string `json:"text"`
}

func (note) WireName() string { return "jobtest.note" }

// noteClient returns a Client whose note handler succeeds with the note's
// text as Job Output, unless the text is "fail", and one note job run to
// its end.
func noteClient(t *testing.T, text string) (*jobtest.Client, backwave.JobID) {
	t.Helper()
	h := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[note]) error {
		if j.Args.Text == "fail" {
			return backwave.FailPermanently(errors.New("refused"))
		}
		j.SetOutput([]byte(j.Args.Text))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := jobtest.New(t, backwave.Config{Handlers: h})
	id, err := c.Enqueue(t.Context(), note{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	c.RunUntilIdle()
	return c, id
}

// Each Require helper passes on what is there and fails, saying what it
// found, on what is not.
func TestRequireHelpers(t *testing.T) {
	t.Parallel()
	c, id := noteClient(t, "hello")
	start := vtime.Epoch
	ok := []jobtest.Step{
		{State: backwave.StateScheduled, Via: backwave.ViaInsert, At: start},
		{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1},
		{State: backwave.StateSucceeded, Via: backwave.ViaSucceed, Attempt: 1, At: start},
	}
	tests := []struct {
		name string
		call func(tb testing.TB)
		fail string // "" when the call must pass; else part of its failure
	}{
		{"enqueued", func(tb testing.TB) { jobtest.RequireEnqueued(tb, c, note{Text: "hello"}) }, ""},
		{"enqueued other args", func(tb testing.TB) { jobtest.RequireEnqueued(tb, c, note{Text: "bye"}) },
			`no job of wire name "jobtest.note" with args {"text":"bye"}; the 1 stored with that wire name, newest first:`},
		{"enqueued other wire name", func(tb testing.TB) { jobtest.RequireEnqueued(tb, c, ChargeCard{}) },
			`no job of that wire name is stored`},
		{"state", func(tb testing.TB) { jobtest.RequireState(tb, c, id, backwave.StateSucceeded) }, ""},
		{"state other", func(tb testing.TB) { jobtest.RequireState(tb, c, id, backwave.StateDeadLettered) },
			"is succeeded, want dead_lettered"},
		{"state unknown job", func(tb testing.TB) { jobtest.RequireState(tb, c, id+100, backwave.StateSucceeded) }, "not found"},
		{"output", func(tb testing.TB) { jobtest.RequireOutput(tb, c, id, []byte("hello")) }, ""},
		{"output other", func(tb testing.TB) { jobtest.RequireOutput(tb, c, id, []byte("bye")) }, `has output "hello", want "bye"`},
		{"transitions", func(tb testing.TB) { jobtest.RequireTransitions(tb, c, id, ok...) }, ""},
		{"transitions short", func(tb testing.TB) { jobtest.RequireTransitions(tb, c, id, ok[:2]...) }, "entry 2 differs (got 3 entries, want 2)"},
		{"transitions long", func(tb testing.TB) {
			jobtest.RequireTransitions(tb, c, id, append(ok, jobtest.Step{State: backwave.StateSucceeded})...)
		}, "entry 3 differs (got 3 entries, want 4)"},
		{"transitions wrong attempt", func(tb testing.TB) {
			bad := append([]jobtest.Step(nil), ok...)
			bad[1].Attempt = 2
			jobtest.RequireTransitions(tb, c, id, bad...)
		}, "entry 1 differs"},
		{"transitions wrong instant", func(tb testing.TB) {
			bad := append([]jobtest.Step(nil), ok...)
			bad[2].At = start.Add(time.Second)
			jobtest.RequireTransitions(tb, c, id, bad...)
		}, "entry 2 differs"},
		{"transitions missing detail", func(tb testing.TB) {
			bad := append([]jobtest.Step(nil), ok...)
			bad[2].Detail = "boom"
			jobtest.RequireTransitions(tb, c, id, bad...)
		}, "entry 2 differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fatal, _ := runFake(tt.call)
			switch {
			case tt.fail == "" && fatal != "":
				t.Fatalf("failed: %s", fatal)
			case tt.fail != "" && fatal == "":
				t.Fatalf("passed, want a failure containing %q", tt.fail)
			case !strings.Contains(fatal, tt.fail):
				t.Fatalf("failed with %q, want it to contain %q", fatal, tt.fail)
			}
		})
	}
}

// RequireTransitions matches Failure Detail by substring.
func TestRequireTransitionsDetail(t *testing.T) {
	t.Parallel()
	c, id := noteClient(t, "fail")
	jobtest.RequireState(t, c, id, backwave.StateDeadLettered)
	jobtest.RequireTransitions(t, c, id,
		jobtest.Step{State: backwave.StateScheduled, Via: backwave.ViaInsert},
		jobtest.Step{State: backwave.StateRunning, Via: backwave.ViaClaim, Attempt: 1},
		jobtest.Step{State: backwave.StateDeadLettered, Via: backwave.ViaDeadLetter, Attempt: 1, Detail: "refused"},
	)
	jobtest.RequireOutput(t, c, id, nil)
}
