package backwave_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// A Client takes the store's own clock when Config.Clock is nil, and
// refuses a clock that a store on a vtime.Manual would never reach.
func TestClientClockFollowsTheStore(t *testing.T) {
	t.Parallel()
	manual := vtime.NewManual(vtime.Epoch)
	later := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		store   func() backwave.Store
		clock   backwave.Clock
		refused bool
		due     time.Time // of a job enqueued WithDelay(time.Hour)
	}{
		{name: "manual store, no Config.Clock", store: func() backwave.Store { return memstore.New(memstore.Options{}) },
			due: vtime.Epoch.Add(time.Hour)},
		{name: "manual store, its own clock", store: func() backwave.Store { return memstore.New(memstore.Options{Clock: manual}) },
			clock: manual, due: vtime.Epoch.Add(time.Hour)},
		{name: "manual store, wall clock", store: func() backwave.Store { return memstore.New(memstore.Options{}) },
			clock: backwave.WallClock{}, refused: true},
		{name: "manual store, another manual", store: func() backwave.Store { return memstore.New(memstore.Options{Clock: manual}) },
			clock: vtime.NewManual(vtime.Epoch), refused: true},
		{name: "wall store, a fixed node clock", store: newStoreAsStore,
			clock: fixedClock(later), due: later.Add(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := backwave.NewClient(tc.store(), backwave.Config{Clock: tc.clock})
			if tc.refused {
				if !errors.Is(err, backwave.ErrInvalidConfig) || !strings.Contains(err.Error(), "leave Config.Clock nil") {
					t.Fatalf("NewClient err = %v, want ErrInvalidConfig saying what to do", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, err := c.Admin("ops:test")
			if err != nil {
				t.Fatal(err)
			}
			id, err := c.Enqueue(context.Background(), greet{"later"}, backwave.WithDelay(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			j, err := a.Job(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if !j.Job.ScheduledAt.Equal(tc.due) {
				t.Fatalf("WithDelay(1h) due %v, want %v", j.Job.ScheduledAt, tc.due)
			}
		})
	}
}

func newStoreAsStore() backwave.Store { return newStore() }

// Over memstore.Options{} — Virtual Time — a delayed job and a failed
// Attempt's retry come due when the store's clock is advanced past their
// delay, and not before: the Client's events and the due times it computes
// are on the store's clock. (The bubble's own clock starts at vtime.Epoch
// too, so the store's is moved off it first: a Client on the host's clock
// would then make the delayed job due at once.)
func TestDueTimesFollowTheStoresVirtualTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		clock := st.Clock().(*vtime.Manual)
		clock.Advance(10 * 365 * 24 * time.Hour)
		var runs atomic.Int32
		handlers := backwave.NewHandlers()
		if err := backwave.AddHandlerFunc(handlers, func(context.Context, *backwave.Job[greet]) error {
			if runs.Add(1) == 1 {
				return errors.New("first Attempt fails")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		c := startClient(t, st, backwave.Config{
			Handlers:    handlers,
			Groups:      []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
			RetryPolicy: backwave.RetryPolicy{Initial: time.Minute, Max: time.Minute, Multiplier: 1},
		})
		id, err := c.Enqueue(context.Background(), greet{"later"}, backwave.WithDelay(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute) // many poll intervals of the bubble's time
		if j := getJob(t, st, id); j.State != job.StateScheduled || j.Attempt != 0 {
			t.Fatalf("a job delayed by an hour of Virtual Time ran before the store's clock moved: %v at Attempt %d", j.State, j.Attempt)
		}
		clock.Advance(time.Hour)
		waitFor(t, "the retry", func() bool {
			j := getJob(t, st, id)
			return j.State == job.StateScheduled && j.RetryCause == job.RetryCauseHandlerFailed
		})
		clock.Advance(time.Minute)
		waitState(t, st, id, job.StateSucceeded)
		if n := runs.Load(); n != 2 {
			t.Fatalf("handler ran %d times, want 2", n)
		}
	})
}

var _ store.ClockSource = (*memstore.Store)(nil)
