package backwave_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// A Transition Observer reacts to jobs reaching a declared state — here
// every Dead-Lettered job — at least once, from whichever node holds the
// walk of the Transition Log.
func ExampleTransitionObserver() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})

	workers := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[SendWelcome]) error {
		return fmt.Errorf("mail server unreachable")
	})
	if err != nil {
		panic(err)
	}
	posted := make(chan string, 1)
	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: workers,
		Groups: []backwave.WorkerGroupOptions{
			backwave.DefaultWorkerGroup("default", backwave.Strict(backwave.DefaultQueue)),
		},
		Logger: slog.New(slog.DiscardHandler),
		TransitionObservers: []backwave.TransitionObserver{{
			Name:   "chat-dead-letters",
			States: []backwave.JobState{backwave.StateDeadLettered},
			Observe: func(ctx context.Context, t backwave.ObservedTransition) error {
				// Delivered at least once: a real reaction is keyed on
				// (t.JobID, t.Seq) so a redelivery posts nothing twice.
				posted <- fmt.Sprintf("%s job dead-lettered after %d attempt(s), from %s", t.WireName, t.Attempt, t.From)
				return nil
			},
		}},
	})
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	if _, err := client.Enqueue(ctx, SendWelcome{To: "ada@example.com"}, backwave.WithMaxAttempts(1)); err != nil {
		panic(err)
	}
	fmt.Println(<-posted)
	if err := client.Stop(ctx); err != nil {
		panic(err)
	}
	// Output: send_welcome job dead-lettered after 1 attempt(s), from running
}
