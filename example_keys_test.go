package backwave_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// ImportContacts imports one batch of a customer's contacts.
type ImportContacts struct {
	Batch int `json:"batch"`
}

func (ImportContacts) WireName() string { return "example.import_contacts" }

// One customer floods the Queue with imports while another enqueues one.
// With Fair Claim on, the next claim serves both customers, and the Key
// Limit keeps the flooding customer to two imports Running at once.
func ExampleWithConcurrencyKey() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	client, err := backwave.NewClient(st, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	// The Queue has no job yet: WithQueueSetup lets the settings set it up.
	admin, err := backwave.NewAdmin(st, "ops:ada", backwave.WithQueueSetup())
	if err != nil {
		panic(err)
	}
	if err := admin.SetFairClaim(ctx, backwave.DefaultQueue, true); err != nil {
		panic(err)
	}
	if err := admin.SetKeyLimit(ctx, backwave.DefaultQueue, 2); err != nil {
		panic(err)
	}
	for batch := range 5 {
		if _, err := client.Enqueue(ctx, ImportContacts{Batch: batch}, backwave.WithConcurrencyKey("acme")); err != nil {
			panic(err)
		}
	}
	if _, err := client.Enqueue(ctx, ImportContacts{Batch: 0}, backwave.WithConcurrencyKey("globex")); err != nil {
		panic(err)
	}
	_, err = client.Enqueue(ctx, ImportContacts{}, backwave.WithConcurrencyKey(""))
	fmt.Println(err)

	qs, err := admin.Queues(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %s\n", qs[0].Name, qs[0].Keys)
	keys, err := admin.QueueKeys(ctx, backwave.DefaultQueue, 5)
	if err != nil {
		panic(err)
	}
	for _, k := range keys {
		fmt.Printf("%s: %d scheduled, %d running\n", k.Key, k.Scheduled, k.Running)
	}
	// Output:
	// backwave: enqueue: invalid job: WithConcurrencyKey(""): a Concurrency Key needs a name (leave the option out for none)
	// default: key limit 2, fair
	// acme: 5 scheduled, 0 running
	// globex: 1 scheduled, 0 running
}
