package backwave_test

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// A Rate Limit caps how many of a Queue's jobs start per window, across the
// cluster: here at most 100 a minute. Setting it is an audited Operator
// Action; Queues shows it with the starts counted in the current window.
func ExampleAdmin_SetQueueRate() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})
	admin, err := backwave.NewAdmin(st, "ops:ada", backwave.WithQueueSetup())
	if err != nil {
		panic(err)
	}
	if err := admin.SetQueueRate(ctx, "payments", backwave.QueueRate{Limit: 100, Period: time.Minute}); err != nil {
		panic(err)
	}
	qs, err := admin.Queues(ctx)
	if err != nil {
		panic(err)
	}
	for _, q := range qs {
		fmt.Printf("%s: rate %s, %d started this window\n", q.Name, q.Rate, q.RateStarted)
	}
	audit, err := admin.Audit(ctx, backwave.AuditListParams{Queue: "payments"})
	if err != nil {
		panic(err)
	}
	for _, a := range audit.Items {
		fmt.Printf("%s by %s: %s\n", a.Action, a.Actor, a.Detail)
	}
	// Output:
	// payments: rate 100/1m0s, 0 started this window
	// queue_set_rate by ops:ada: rate 100/1m0s
}
