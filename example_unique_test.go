package backwave_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// SendInvoice emails one invoice.
type SendInvoice struct {
	Invoice int `json:"invoice"`
}

func (SendInvoice) WireName() string { return "example.send_invoice" }

// Send each invoice at most once while its job is live: a second enqueue of
// the same key stores nothing and answers the job already waiting.
func ExampleWithUnique() {
	ctx := context.Background()
	client, err := backwave.NewClient(memstore.New(memstore.Options{}), backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	send := func(invoice int) {
		key := backwave.WithUnique(fmt.Sprintf("invoice:%d:send", invoice), backwave.UniqueWhileLive())
		res, err := client.EnqueueUnique(ctx, SendInvoice{Invoice: invoice}, key)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("invoice %d: job %d, inserted %v\n", invoice, res.ID, res.Inserted)
	}
	send(1042)
	send(1042)
	send(1043)
	// Output:
	// invoice 1042: job 1, inserted true
	// invoice 1042: job 1, inserted false
	// invoice 1043: job 2, inserted true
}
