package backwave_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// Resize makes one size of an image; Publish runs after every size is made.
type Resize struct {
	Width int `json:"width"`
}

func (Resize) WireName() string { return "example.resize" }

type Publish struct{}

func (Publish) WireName() string { return "example.publish" }

// Enqueue a fan-out/fan-in graph in one call: three resizes, then a publish
// that waits for all three (on-success: a failed resize would cancel it)
// and reads their Job Output.
func ExampleWithParentsInBatch() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})

	handlers := backwave.NewHandlers()
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Resize]) error {
		return j.SetOutputJSON(fmt.Sprintf("img-%dpx.webp", j.Args.Width))
	})
	parents := make(chan []backwave.JobID, 1)
	done := make(chan struct{})
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Publish]) error {
		var files []string
		for _, id := range <-parents {
			file, ok, err := backwave.AncestorOutputJSON[string](ctx, j, id)
			if err != nil {
				return err
			}
			if ok {
				files = append(files, file)
			}
		}
		slices.Sort(files)
		fmt.Println("publishing", strings.Join(files, ", "))
		close(done)
		return nil
	})

	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: handlers,
		Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("default", backwave.Strict(backwave.DefaultQueue))},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	ids, err := client.EnqueueMany(ctx, []backwave.EnqueueParams{
		{Args: Publish{}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 1, 2, 3)}},
		{Args: Resize{Width: 320}},
		{Args: Resize{Width: 640}},
		{Args: Resize{Width: 1280}},
	})
	if err != nil {
		panic(err)
	}
	parents <- ids[1:]
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil {
		panic(err)
	}
	// Output:
	// publishing img-1280px.webp, img-320px.webp, img-640px.webp
}

// A cleanup job that runs whatever its parent's end, enqueued after the
// parent: WithParents names stored jobs.
func ExampleWithParents() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})
	client, err := backwave.NewClient(st, backwave.Config{}) // insert-only
	if err != nil {
		panic(err)
	}
	parent, err := client.Enqueue(ctx, Resize{Width: 320})
	if err != nil {
		panic(err)
	}
	cleanup, err := client.Enqueue(ctx, Publish{}, backwave.WithParents(backwave.OnAnyTerminal, parent))
	if err != nil {
		panic(err)
	}
	j, err := st.JobGet(ctx, cleanup)
	if err != nil {
		panic(err)
	}
	deps, err := st.JobDependencies(ctx, cleanup)
	if err != nil {
		panic(err)
	}
	fmt.Println(j.State, deps.Mode, deps.Pending())
	// Output:
	// awaiting_parent on_any_terminal 1
}
