package backwave_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
)

// TestStatsShowsPumpsAndQueues fills a Pump of 4 Workers with 6 blocked
// jobs: Stats shows 4 executing and no free capacity (glossary:
// Backpressure), the Queue's Running count against its Concurrency Limit
// and a paused Queue; once the jobs finish, 6 claims and 6 outcomes, and
// per-second rates over the window.
func TestStatsShowsPumpsAndQueues(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := newStore()
		release := make(chan struct{})
		h := backwave.NewHandlers()
		mustAdd(t, backwave.AddHandlerFunc(h, func(ctx context.Context, _ *backwave.Job[obsOK]) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}))
		g := group("g", backwave.DefaultQueue, "idle")
		g.PoolSize = 4
		start := time.Now()
		c := startClient(t, st, backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{g}})
		admin, err := c.Admin(backwave.Actor("test"), backwave.WithQueueSetup())
		if err != nil {
			t.Fatal(err)
		}
		if err := admin.SetQueueLimit(ctx, backwave.DefaultQueue, 10); err != nil {
			t.Fatal(err)
		}
		if err := admin.SetQueueRate(ctx, backwave.DefaultQueue, backwave.QueueRate{Limit: 1000, Period: 24 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		if err := admin.PauseQueue(ctx, "idle"); err != nil {
			t.Fatal(err)
		}
		for range 6 {
			if _, err := c.Enqueue(ctx, obsOK{}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "4 executing", func() bool { return c.PumpStats()[0].Pumps[0].Executing == 4 })
		s, err := c.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Groups) != 1 || s.Groups[0].Name != "g" || len(s.Groups[0].Pumps) != 1 {
			t.Fatalf("groups = %+v, want one group g with one Pump", s.Groups)
		}
		p := s.Groups[0].Pumps[0]
		if p.PoolSize != 4 || p.Executing != 4 || p.Free != 0 || p.BufferedOutcomes != 0 || p.Claimed != 4 || p.Worker == "" || p.Stopping {
			t.Errorf("pump = %+v, want 4 of 4 executing, none free, 4 claimed", p)
		}
		want := map[string]backwave.QueueStats{
			backwave.DefaultQueue: {Name: backwave.DefaultQueue, Running: 4, Limit: 10, Rate: backwave.QueueRate{Limit: 1000, Period: 24 * time.Hour}, RateStarted: 4},
			"idle":                {Name: "idle", Paused: true},
		}
		for _, q := range s.Queues {
			if w, ok := want[q.Name]; ok && q != w {
				t.Errorf("queue %s = %+v, want %+v", q.Name, q, w)
			}
			delete(want, q.Name)
		}
		if len(want) > 0 {
			t.Errorf("queues %v missing from %+v", want, s.Queues)
		}

		close(release)
		waitFor(t, "6 reported", func() bool { return c.PumpStats()[0].Pumps[0].Reported == 6 })
		time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
		p = c.PumpStats()[0].Pumps[0]
		if p.Claimed != 6 || p.Executing != 0 || p.BufferedOutcomes != 0 || p.Free != 4 {
			t.Errorf("pump after the jobs = %+v, want 6 claimed, nothing held, 4 free", p)
		}
		// Every claim and outcome landed in the first second: one second
		// has passed since the Pump started.
		if p.ClaimsPerSecond != 6 || p.OutcomesPerSecond != 6 {
			t.Errorf("rates at 1.5s = %v claims/s, %v outcomes/s, want 6 and 6", p.ClaimsPerSecond, p.OutcomesPerSecond)
		}
		time.Sleep(backwave.StatsRateWindow + time.Second)
		if p = c.PumpStats()[0].Pumps[0]; p.ClaimsPerSecond != 0 || p.OutcomesPerSecond != 0 {
			t.Errorf("rates past the window = %v, %v, want 0 and 0", p.ClaimsPerSecond, p.OutcomesPerSecond)
		}
	})
}

// noQueues fails QueueList.
type noQueues struct{ store.Store }

var errNoQueues = errors.New("queue list is down")

func (noQueues) QueueList(context.Context) ([]store.QueueInfo, error) { return nil, errNoQueues }

// TestStatsReportsStoreErrors: a failed claim is the Pump's
// LastStoreError, and a failed Queue read returns the Pumps with the error.
func TestStatsReportsStoreErrors(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := backwave.NewHandlers()
		mustAdd(t, backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[obsOK]) error { return nil }))
		c := startClient(t, noQueues{failingClaims{newStore()}}, backwave.Config{
			Handlers: h,
			Groups:   []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
			Logger:   testLogger(t, slog.LevelError+1),
		})
		waitFor(t, "a failed claim", func() bool { return c.PumpStats()[0].Pumps[0].LastStoreError != nil })
		s, err := c.Stats(context.Background())
		if !errors.Is(err, errNoQueues) {
			t.Errorf("Stats error = %v, want %v", err, errNoQueues)
		}
		if len(s.Groups) != 1 || s.Queues != nil {
			t.Fatalf("Stats = %+v, want the group and no Queues", s)
		}
		e := s.Groups[0].Pumps[0].LastStoreError
		if e.Operation != "claim" || !errors.Is(e.Err, errClaimsDown) || e.At.IsZero() {
			t.Errorf("LastStoreError = %+v, want the failed claim", e)
		}
	})
}

// TestStatsOfInsertOnlyClient: a Client without Worker Groups has no Pumps
// and still reads the Queues.
func TestStatsOfInsertOnlyClient(t *testing.T) {
	t.Parallel()
	st := newStore()
	c, err := backwave.NewClient(st, backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(context.Background(), obsOK{}, backwave.WithQueue("q")); err != nil {
		t.Fatal(err)
	}
	s, err := c.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Groups) != 0 || len(s.Queues) != 1 || s.Queues[0].Name != "q" {
		t.Errorf("Stats = %+v, want no groups and Queue q", s)
	}
}
