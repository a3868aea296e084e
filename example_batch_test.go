package backwave_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"slices"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// IndexDocument adds one document to the search index.
type IndexDocument struct {
	Document int `json:"document"`
}

func (IndexDocument) WireName() string { return "example.index_document" }

// errTooLarge stands for the index's refusal of one document of a bulk
// request.
var errTooLarge = errors.New("document too large")

// A batch handler takes up to Size due jobs of one Wire Name per call — one
// bulk request for many documents — and answers one error per job, in the
// order of jobs: each job keeps its own outcome. Here the index refuses
// document 3, which is dead-lettered; the others succeed.
func ExampleAddBatchHandlerFunc() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})
	handlers := backwave.NewHandlers()
	var called []int
	err := backwave.AddBatchHandlerFunc(handlers, backwave.BatchOptions{Size: 5, Linger: 100 * time.Millisecond},
		func(ctx context.Context, jobs []*backwave.Job[IndexDocument]) []error {
			errs := make([]error, len(jobs))
			for i, j := range jobs {
				called = append(called, j.Args.Document) // one call: no other goroutine appends
				if j.Args.Document == 3 {
					errs[i] = backwave.FailPermanently(fmt.Errorf("document %d: %w", j.Args.Document, errTooLarge))
				}
			}
			return errs
		})
	if err != nil {
		log.Fatal(err)
	}
	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: handlers,
		Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("indexer", backwave.Strict(backwave.DefaultQueue))},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	var ids []backwave.JobID
	for doc := 1; doc <= 5; doc++ {
		id, err := client.Enqueue(ctx, IndexDocument{Document: doc})
		if err != nil {
			log.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	for _, id := range ids { // wait for every job to end
		for {
			j, err := client.JobGet(ctx, id)
			if err != nil {
				log.Fatal(err)
			}
			if j.State.Terminal() {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	slices.Sort(called) // the call's order is the order its jobs joined it
	fmt.Println("one call with documents", called)
	for _, id := range ids {
		j, _ := client.JobGet(ctx, id)
		fmt.Printf("job %d: %s\n", id, j.State)
	}
	// Output:
	// one call with documents [1 2 3 4 5]
	// job 1: succeeded
	// job 2: succeeded
	// job 3: dead_lettered
	// job 4: succeeded
	// job 5: succeeded
}
