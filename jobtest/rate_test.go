package jobtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

type rated struct{ N int }

func (rated) WireName() string { return "jobtest.rated" }

// A Queue's Rate Limit holds on Virtual Time too: the Driver's re-poll at
// the instant a spent window reopens is one of the instants jobtest
// visits, so RunUntilIdle neither stalls on a spent window nor starts
// more than the limit in any window.
func TestRateLimitOnVirtualTime(t *testing.T) {
	t.Parallel()
	handlers := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(handlers, func(context.Context, *backwave.Job[rated]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	c := jobtest.New(t, backwave.Config{Handlers: handlers})
	admin, err := c.Admin("test", backwave.WithQueueSetup()) // the Queue has no job yet
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.SetQueueRate(t.Context(), backwave.DefaultQueue, backwave.QueueRate{Limit: 2, Period: time.Minute}); err != nil {
		t.Fatal(err)
	}
	var ids []backwave.JobID
	for i := range 5 {
		id, err := c.Enqueue(t.Context(), rated{i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	c.RunUntilIdle()
	perWindow := map[int64]int{}
	for _, id := range ids {
		jobtest.RequireState(t, c, id, backwave.StateSucceeded)
		d, err := admin.Job(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range d.Transitions {
			if tr.State == backwave.StateRunning {
				perWindow[tr.At.Unix()/60]++
			}
		}
	}
	if len(perWindow) < 3 {
		t.Errorf("5 starts at 2 a minute fell in %d windows, want at least 3: %v", len(perWindow), perWindow)
	}
	for w, n := range perWindow {
		if n > 2 {
			t.Errorf("window %d started %d jobs, over the limit of 2", w, n)
		}
	}
}
