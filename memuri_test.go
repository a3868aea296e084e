package backwave_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// delayed is a job the mem:// test enqueues with a delay.
type delayed struct{}

func (delayed) WireName() string { return "mem_uri_delayed" }

// TestMemURIRealClock: "mem://" opened by URI runs on the real clock, so a
// real Client over it sees a delayed job come due (on a clock that never
// moves it would stay Scheduled for ever); "?clock=manual" is the Manual
// clock a test asks for.
func TestMemURIRealClock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	done := make(chan struct{})
	workers := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(workers, func(context.Context, *backwave.Job[delayed]) error {
		close(done)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: workers,
		Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("default", backwave.Strict(backwave.DefaultQueue))},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Stop(context.Background()) }()
	if _, err := client.Enqueue(ctx, delayed{}, backwave.WithDelay(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a job enqueued WithDelay(50ms) on mem:// never ran: the store's clock does not move")
	}

	manual, err := store.Open(ctx, "mem://?clock=manual")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := manual.(*memstore.Store).Clock().(*vtime.Manual); !ok {
		t.Fatalf("mem://?clock=manual runs on %T, want *vtime.Manual", manual.(*memstore.Store).Clock())
	}
	if _, err := store.Open(ctx, "mem://?clock=sundial"); !errors.Is(err, store.ErrInvalidParams) {
		t.Fatalf("mem://?clock=sundial: %v, want ErrInvalidParams", err)
	}
}
