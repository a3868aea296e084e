package shell_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
)

// hangingClaim never answers an ObserverClaim until its context is done,
// and records how long each waited.
type hangingClaim struct {
	store.Observers
	mu     sync.Mutex
	waited []time.Duration
}

func (h *hangingClaim) ObserverClaim(ctx context.Context, _ store.ObserverClaimParams) (store.ObserverClaimResult, error) {
	start := time.Now()
	<-ctx.Done()
	h.mu.Lock()
	h.waited = append(h.waited, time.Since(start))
	h.mu.Unlock()
	return store.ObserverClaimResult{}, ctx.Err()
}

// TestWalkStoreCallDeadline: a walk's store calls have the deadline every
// machine's have (node.Pacing.CallTimeout), a third of its Lease — not a
// flat deadline of their own — so a store that never answers costs the
// walk one missed renewal, as it does a Pump.
func TestWalkStoreCallDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &hangingClaim{Observers: newStore()}
		p, err := shell.NewWalkPump(shell.WalkPumpConfig{
			Walker: node.WalkerConfig{Observer: "chat", States: []job.State{job.StateSucceeded}, LeaseDuration: 3 * time.Second},
			Worker: "w1", Store: st, Logger: slog.New(slog.DiscardHandler),
			Deliver: func(context.Context, store.ObservedTransition) error { return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Config(); got.DrainTimeout != node.DefaultDrainTimeout || got.RelinquishTimeout != node.DefaultRelinquishTimeout {
			t.Fatalf("drain %v, relinquish %v: want a Pump's defaults %v, %v", got.DrainTimeout, got.RelinquishTimeout, node.DefaultDrainTimeout, node.DefaultRelinquishTimeout)
		}
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if err := p.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if len(st.waited) == 0 || st.waited[0] != time.Second {
			t.Fatalf("the claims waited %v, want the first cut at a third of the 3 s Lease", st.waited)
		}
	})
}

// TestWalkPumpConfigErrors: the walk's knobs are checked where every
// machine's are, and each error wraps the one ErrInvalidConfig.
func TestWalkPumpConfigErrors(t *testing.T) {
	t.Parallel()
	base := shell.WalkPumpConfig{
		Walker: node.WalkerConfig{Observer: "chat", States: []job.State{job.StateSucceeded}},
		Worker: "w1", Store: newStore(),
		Deliver: func(context.Context, store.ObservedTransition) error { return nil },
	}
	for name, adjust := range map[string]func(*shell.WalkPumpConfig){
		"no worker":           func(c *shell.WalkPumpConfig) { c.Worker = "" },
		"no store":            func(c *shell.WalkPumpConfig) { c.Store = nil },
		"no callback":         func(c *shell.WalkPumpConfig) { c.Deliver = nil },
		"negative drain":      func(c *shell.WalkPumpConfig) { c.DrainTimeout = -time.Second },
		"negative relinquish": func(c *shell.WalkPumpConfig) { c.RelinquishTimeout = -time.Second },
		"negative interval":   func(c *shell.WalkPumpConfig) { c.Walker.Interval = -time.Second },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := base
			adjust(&cfg)
			if _, err := shell.NewWalkPump(cfg); !errors.Is(err, shell.ErrInvalidConfig) {
				t.Fatalf("NewWalkPump: %v, want ErrInvalidConfig", err)
			}
		})
	}
}

// TestWalkDrainCutsStoreCall: a walk runs on the same Shell loop as a Pump,
// so its stop is bounded the same way: the drain period is timed from the
// stop, and its end cancels a store call still in flight, here a claim
// whose deadline (a third of a 60 s Lease) is far off.
func TestWalkDrainCutsStoreCall(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &hangingClaim{Observers: newStore()}
		p, err := shell.NewWalkPump(shell.WalkPumpConfig{
			Walker: node.WalkerConfig{Observer: "chat", States: []job.State{job.StateSucceeded}, LeaseDuration: time.Minute},
			Worker: "w1", Store: st, Logger: slog.New(slog.DiscardHandler), DrainTimeout: 2 * time.Second,
			Deliver: func(context.Context, store.ObservedTransition) error { return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the first claim hangs
		start := time.Now()
		if err := p.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Fatalf("Stop took %v, want the 2 s drain period", took)
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if len(st.waited) != 1 || st.waited[0] != 2*time.Second {
			t.Fatalf("the claims waited %v, want one cut at the end of the drain", st.waited)
		}
	})
}
