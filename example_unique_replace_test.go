package backwave_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// ReindexDocument rebuilds the search index of one document.
type ReindexDocument struct {
	Document int `json:"document"`
	Revision int `json:"revision"`
}

func (ReindexDocument) WireName() string { return "example.reindex_document" }

// Reindex a document once per burst of edits: each save pushes the job
// out by a minute and gives it the newest revision, but a document edited
// without pause is still reindexed ten minutes after the burst began.
func ExampleUniqueScope_Debounce() {
	ctx := context.Background()
	clock := vtime.NewManual(vtime.Epoch)
	st := memstore.New(memstore.Options{Clock: clock})
	client, err := backwave.NewClient(st, backwave.Config{Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	start := clock.Now()
	saved := func(revision int) {
		key := backwave.WithUnique("reindex:7", backwave.UniqueWhileLive().Debounce(time.Minute, 10*time.Minute))
		res, err := client.EnqueueUnique(ctx, ReindexDocument{Document: 7, Revision: revision}, key)
		if err != nil {
			fmt.Println(err)
			return
		}
		j, err := client.JobGet(ctx, res.ID)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("revision %d at +%v: job %d (inserted %v, replaced %v) due at +%v\n",
			revision, clock.Now().Sub(start), res.ID, res.Inserted, res.Replaced, j.ScheduledAt.Sub(start))
	}
	saved(1)
	clock.Advance(30 * time.Second)
	saved(2)
	clock.Advance(9 * time.Minute)
	saved(3)
	// Output:
	// revision 1 at +0s: job 1 (inserted true, replaced false) due at +1m0s
	// revision 2 at +30s: job 1 (inserted false, replaced true) due at +1m30s
	// revision 3 at +9m30s: job 1 (inserted false, replaced true) due at +10m0s
}

// Keep only the newest request for a report: a second enqueue while the
// first still waits rewrites it with the new args and due time.
func ExampleUniqueScope_Replace() {
	ctx := context.Background()
	client, err := backwave.NewClient(memstore.New(memstore.Options{}), backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	key := backwave.WithUnique("invoice:1042:send", backwave.UniqueWhileLive().Replace())
	for _, delay := range []time.Duration{time.Hour, time.Minute} {
		res, err := client.EnqueueUnique(ctx, SendInvoice{Invoice: 1042}, key, backwave.WithDelay(delay))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("job %d: inserted %v, replaced %v\n", res.ID, res.Inserted, res.Replaced)
	}
	// Output:
	// job 1: inserted true, replaced false
	// job 1: inserted false, replaced true
}
