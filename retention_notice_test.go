package backwave_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of Pumps.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRetentionOffNotice: a Client without a Retention Policy logs at Start
// that terminal jobs are kept forever (the engine spec's "Retention is off
// by default … the Engine logs this at Start"), once per process however
// many Clients it starts; a Client with a Retention Policy does not.
func TestRetentionOffNotice(t *testing.T) {
	t.Parallel()
	const line = "terminal jobs are kept forever"
	start := func(t *testing.T, log *slog.Logger, retention *backwave.RetentionPolicy) *backwave.Client {
		t.Helper()
		workers := backwave.NewHandlers()
		if err := backwave.AddHandlerFunc(workers, func(context.Context, *backwave.Job[delayed]) error { return nil }); err != nil {
			t.Fatal(err)
		}
		c, err := backwave.NewClient(memstore.New(memstore.Options{Clock: backwave.WallClock{}}), backwave.Config{
			Handlers:  workers,
			Groups:    []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("default", backwave.Strict(backwave.DefaultQueue))},
			Logger:    log,
			Retention: retention,
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name      string
		retention *backwave.RetentionPolicy
		clients   int
		want      int
	}{
		{"no policy, one Client", nil, 1, 1},
		{"no policy, three Clients in one process", nil, 3, 1},
		{"a policy", &backwave.RetentionPolicy{KeepSucceeded: time.Hour, KeepDeadLettered: time.Hour}, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out syncBuffer
			log := slog.New(slog.NewTextHandler(&out, nil))
			cs := make([]*backwave.Client, tc.clients)
			for i := range cs {
				cs[i] = start(t, log, tc.retention)
			}
			backwave.FreshNotices(cs...)
			for _, c := range cs {
				if err := c.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				if err := c.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if got := strings.Count(out.String(), line); got != tc.want {
				t.Fatalf("%q logged %d times, want %d; the log:\n%s", line, got, tc.want, out.String())
			}
		})
	}
}
