package jobtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

// SyncLedger is a job whose handler always fails.
type SyncLedger struct {
	Account string `json:"account"`
}

func (SyncLedger) WireName() string { return "example.sync_ledger" }

// A Transition Observer that posts Dead-Lettered jobs to a chat, run on
// Virtual Time: the job runs out of Attempts, the walk of the Transition
// Log delivers the Dead-Lettered transition, the chat is down at the first
// try and the walk delivers the same entry again after its backoff (one
// Interval) — at-least-once, never skipped — all inside one RunUntilIdle.
func TestExampleTransitionObserverOnVirtualTime(t *testing.T) {
	t.Parallel()
	handlers := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[SyncLedger]) error {
		return errors.New("ledger unavailable")
	})
	if err != nil {
		t.Fatal(err)
	}
	type post struct {
		at time.Time
		t  backwave.ObservedTransition
	}
	var tries []post
	var c *jobtest.Client
	c = jobtest.New(t, backwave.Config{
		Handlers:    handlers,
		MaxAttempts: 2,
		RetryPolicy: backwave.RetryPolicy{Initial: time.Minute, Max: time.Hour, Multiplier: 2},
		TransitionObservers: []backwave.TransitionObserver{{
			Name:     "chat-dead-letters",
			States:   []backwave.JobState{backwave.StateDeadLettered},
			Interval: 10 * time.Second,
			Observe: func(ctx context.Context, tr backwave.ObservedTransition) error {
				tries = append(tries, post{at: c.Now(), t: tr})
				if len(tries) == 1 {
					return errors.New("chat unavailable") // delivered again after a backoff
				}
				return nil
			},
		}},
	})
	start := c.Now()
	id, err := c.Enqueue(t.Context(), SyncLedger{Account: "acme"})
	if err != nil {
		t.Fatal(err)
	}

	c.RunUntilIdle()

	jobtest.RequireState(t, c, id, backwave.StateDeadLettered)
	if len(tries) != 2 {
		t.Fatalf("the observer was called %d times, want 2 (a failed try, then the redelivery)", len(tries))
	}
	for _, p := range tries {
		if p.t.JobID != id || p.t.State != backwave.StateDeadLettered || p.t.Attempt != 2 || p.t.WireName != "example.sync_ledger" {
			t.Fatalf("delivered %+v, want job %d reaching Dead-Lettered at Attempt 2", p.t, id)
		}
	}
	if tries[0].t.Seq != tries[1].t.Seq {
		t.Fatalf("redelivered Seq %d, want the same entry, Seq %d", tries[1].t.Seq, tries[0].t.Seq)
	}
	// The job dead-letters after its one-minute retry; the walk delivers
	// within an Interval of it, and again one Interval (the first backoff)
	// after the failure.
	deadAt := start.Add(time.Minute)
	if first := tries[0].at; first.Before(deadAt) || first.After(deadAt.Add(10*time.Second)) {
		t.Fatalf("first delivery at %v, want within an Interval of %v", first, deadAt)
	}
	if gap := tries[1].at.Sub(tries[0].at); gap < 10*time.Second || gap > 20*time.Second {
		t.Fatalf("redelivered %v after the failure, want one Interval's backoff (10 s, give or take a tick)", gap)
	}
}
