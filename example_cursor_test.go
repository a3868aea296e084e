package backwave_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// ExportTable is a long job that saves where it got to.
type ExportTable struct {
	Table string `json:"table"`
}

func (ExportTable) WireName() string { return "export_table" }

// A resumable job: each Attempt reads the job's Cursor, exports the pages
// after it, and saves a new Cursor after each. The first Attempt dies after
// page 2; the second resumes at page 3 instead of starting over.
func ExampleJob_SaveCursor() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})

	type cursor struct {
		Page int `json:"page"`
	}
	done := make(chan struct{})
	workers := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[ExportTable]) error {
		var at cursor
		if _, err := j.Cursor(&at); err != nil {
			return err
		}
		for page := at.Page + 1; page <= 4; page++ {
			fmt.Printf("attempt %d: exporting page %d of %s\n", j.Attempt, page, j.Args.Table)
			if err := j.SaveCursor(cursor{Page: page}); err != nil {
				return err
			}
			if j.Attempt == 1 && page == 2 {
				return errors.New("connection dropped") // the Cursor rides this outcome
			}
		}
		close(done)
		return nil
	})
	if err != nil {
		panic(err)
	}
	group := backwave.DefaultWorkerGroup("default", backwave.Strict(backwave.DefaultQueue))
	group.PollInterval = 10 * time.Millisecond
	client, err := backwave.NewClient(st, backwave.Config{
		Handlers:    workers,
		Groups:      []backwave.WorkerGroupOptions{group},
		RetryPolicy: backwave.RetryPolicy{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond, Multiplier: 1},
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	id, err := client.Enqueue(ctx, ExportTable{Table: "orders"})
	if err != nil {
		panic(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil {
		panic(err)
	}
	j, err := st.JobGet(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s, cursor %s saved by attempt %d\n", j.State, j.Cursor.Value, j.Cursor.Attempt)
	// Output:
	// attempt 1: exporting page 1 of orders
	// attempt 1: exporting page 2 of orders
	// attempt 2: exporting page 3 of orders
	// attempt 2: exporting page 4 of orders
	// succeeded, cursor {"page":4} saved by attempt 2
}
