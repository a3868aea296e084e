package jobtest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

// Batch handlers on Virtual Time (docs/job-shapes.md, Batch handlers): jobs
// that cannot fill a call wait for it on the Manual clock, and the call forms
// once the clock passes the linger; each job keeps its own outcome.
func TestBatchLingersOnVirtualTime(t *testing.T) {
	t.Parallel()
	var calls [][]int
	h := backwave.NewHandlers()
	err := backwave.AddBatchHandlerFunc(h, backwave.BatchOptions{Size: 5, Linger: time.Minute},
		func(_ context.Context, jobs []*backwave.Job[work]) []error {
			ns := make([]int, len(jobs))
			errs := make([]error, len(jobs))
			for i, j := range jobs {
				ns[i] = j.Args.N
				if j.Args.N == 2 {
					errs[i] = backwave.FailPermanently(errors.New("refused"))
				}
			}
			slices.Sort(ns)
			calls = append(calls, ns)
			return errs
		})
	if err != nil {
		t.Fatal(err)
	}
	c := jobtest.New(t, backwave.Config{Handlers: h})
	start := c.Now()
	ids := []backwave.JobID{enqueue(t, c, 1), enqueue(t, c, 2), enqueue(t, c, 3)}
	c.RunUntilIdle()
	if len(calls) != 1 || !slices.Equal(calls[0], []int{1, 2, 3}) {
		t.Fatalf("calls %v, want one call of the three jobs", calls)
	}
	for i, want := range []backwave.JobState{backwave.StateSucceeded, backwave.StateDeadLettered, backwave.StateSucceeded} {
		info := jobtest.RequireState(t, c, ids[i], want)
		if got := info.FinalizedAt.Sub(start); got < time.Minute {
			t.Fatalf("job %d ended %v after enqueue, before the call's one-minute linger", ids[i], got)
		}
	}
}
