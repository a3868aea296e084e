package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// The golden files' "fixture NAME PATH" lines build, from code, what the
// command line cannot: a Recurring Schedule (registered from code only)
// and jobs that ran (the command runs no workers).

// flakySync fails its first Attempt and succeeds at its second.
type flakySync struct{}

func (flakySync) JobOptions() backwave.JobOptions { return backwave.JobOptions{Queue: "work"} }

func (flakySync) WireName() string { return "fixture.sync" }

// expiredCard always fails.
type expiredCard struct{}

func (expiredCard) JobOptions() backwave.JobOptions { return backwave.JobOptions{Queue: "work"} }

func (expiredCard) WireName() string { return "fixture.charge" }

// slowRetry fails, and its next Attempt is an hour away.
type slowRetry struct{}

func (slowRetry) JobOptions() backwave.JobOptions { return backwave.JobOptions{Queue: "work"} }

func (slowRetry) WireName() string { return "fixture.slow_retry" }

// runFixture builds fixture name in the SQLite file path (migrating it).
func runFixture(t *testing.T, name, path string) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	switch name {
	case "schedule":
		c, err := backwave.NewClient(s, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		err = c.RegisterSchedule(ctx, backwave.RecurringSchedule{
			Name: "nightly", Cron: "30 2 * * *", Zone: "America/New_York", Args: nightly{}, NoOverlap: true,
			Options: []backwave.EnqueueOption{backwave.WithQueue("reports")},
		})
		if err != nil {
			t.Fatal(err)
		}
	case "worked":
		workJobs(t, s)
	case "workflows":
		workflowJobs(t, s)
	case "nodes":
		stampNodes(t, s)
	default:
		t.Fatalf("unknown fixture %q", name)
	}
}

// workJobs runs three jobs on Queue "work" until job 1 has succeeded after
// a failed Attempt, job 2 has dead-lettered and job 3 is retrying.
func workJobs(t *testing.T, s *sqlite.Store) {
	ctx := context.Background()
	fast := backwave.RetryPolicy{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond, Multiplier: 1}
	slow := backwave.RetryPolicy{Initial: time.Hour, Max: time.Hour, Multiplier: 1}
	h := backwave.NewHandlers()
	err := errors.Join(
		backwave.AddHandlerFunc(h, func(_ context.Context, j *backwave.Job[flakySync]) error {
			if j.Attempt < 2 {
				return errors.New("inventory service timed out")
			}
			return nil
		}, backwave.WithRetryPolicy(fast)),
		backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[expiredCard]) error {
			return errors.New("card expired")
		}, backwave.WithRetryPolicy(fast)),
		backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[slowRetry]) error {
			return errors.New("upstream down")
		}, backwave.WithRetryPolicy(slow)),
	)
	if err != nil {
		t.Fatal(err)
	}
	group := backwave.DefaultWorkerGroup("fixture", backwave.Strict("work"))
	group.PollInterval = 20 * time.Millisecond
	c, err := backwave.NewClient(s, backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{group}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		args backwave.JobArgs
		max  int
	}{{flakySync{}, 3}, {expiredCard{}, 2}, {slowRetry{}, 3}} {
		if _, err := c.Enqueue(ctx, e.args, backwave.WithQueue("work"), backwave.WithMaxAttempts(e.max)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	a, err := backwave.NewAdmin(s, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	want := map[backwave.JobID]backwave.JobState{1: backwave.StateSucceeded, 2: backwave.StateDeadLettered, 3: backwave.StateScheduled}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		done := true
		var last string
		for id, st := range want {
			d, err := a.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if d.Job.State != st || d.Job.RetryCause.String() == "" {
				done, last = false, fmt.Sprintf("job %d is %s, retry cause %q", id, d.Job.State, d.Job.RetryCause)
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fixture worked: %s after 2 minutes", last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stampNodes writes two rows in the node registry, as two Clients would: a
// live one serving Queue work, and one that beat once, a nanosecond beat
// ago, so it is expired by the time it is listed, that served Queue mail.
func stampNodes(t *testing.T, s *sqlite.Store) {
	ctx := context.Background()
	for _, p := range []store.NodeStampParams{
		{ID: "web-a.cafe", Host: "web-a", PID: 4242, Version: backwave.Version, Beat: time.Hour, Forget: backwave.NodeForget,
			Groups: []store.NodeGroup{{Name: "fixture", Queues: []string{"work", "reports"}}}, Running: 2},
		{ID: "old-b.beef", Host: "old-b", PID: 77, Version: "0.0.9", Beat: time.Nanosecond, Forget: backwave.NodeForget,
			Groups: []store.NodeGroup{{Name: "mailers", Queues: []string{"mail"}}}},
	} {
		if _, err := s.NodeStamp(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
}
