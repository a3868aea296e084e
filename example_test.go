package backwave_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// SendWelcome is a job's arguments. Its Wire Name is its identity in storage,
// declared explicitly so renaming the Go type never orphans stored jobs.
type SendWelcome struct {
	To string `json:"to"`
}

func (SendWelcome) WireName() string { return "send_welcome" }

// Enqueue a job and work it on one node over the In-Memory Store.
func Example() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})

	done := make(chan struct{})
	workers := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[SendWelcome]) error {
		fmt.Printf("welcoming %s (attempt %d of %d)\n", j.Args.To, j.Attempt, j.AttemptCeiling)
		close(done)
		return nil
	})
	if err != nil {
		panic(err)
	}

	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: workers,
		Groups: []backwave.WorkerGroupOptions{
			backwave.DefaultWorkerGroup("default", backwave.Strict(backwave.DefaultQueue)),
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}

	id, err := client.Enqueue(ctx, SendWelcome{To: "ada@example.com"}, backwave.WithMaxAttempts(3))
	if err != nil {
		panic(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil { // drains: the outcome is reported
		panic(err)
	}

	j, err := st.JobGet(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println(j.State)
	// Output:
	// welcoming ada@example.com (attempt 1 of 3)
	// succeeded
}
