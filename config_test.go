package backwave_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave"
)

type mailArgs struct{ To string }

func (mailArgs) WireName() string { return "test.mail" }
func (mailArgs) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: "mail"}
}

type otherMailArgs struct{ To string }

// Same Wire Name as mailArgs: a registration conflict.
func (otherMailArgs) WireName() string { return "test.mail" }

type noWireName struct{}

func (noWireName) WireName() string { return "" }

func nop[T backwave.JobArgs](context.Context, *backwave.Job[T]) error { return nil }

func TestNewClientValidatesConfig(t *testing.T) {
	t.Parallel()
	workers := func() *backwave.Handlers {
		w := backwave.NewHandlers()
		if err := backwave.AddHandlerFunc(w, nop[mailArgs]); err != nil {
			t.Fatal(err)
		}
		return w
	}
	valid := func() backwave.Config {
		return backwave.Config{
			Handlers: workers(),
			Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("mail", backwave.Strict("mail"))},
		}
	}
	withGroup := func(mutate func(*backwave.WorkerGroupOptions)) func(*backwave.Config) {
		return func(c *backwave.Config) { mutate(&c.Groups[0]) }
	}
	for _, tc := range []struct {
		name   string
		mutate func(*backwave.Config)
		ok     bool
	}{
		{"defaults", func(*backwave.Config) {}, true},
		{"struct literal with PoolSize", func(c *backwave.Config) {
			c.Groups = []backwave.WorkerGroupOptions{{Name: "g", Policy: backwave.Strict("mail"), PoolSize: 3}}
		}, true},
		{"insert-only", func(c *backwave.Config) { c.Groups = nil; c.Handlers = nil }, true},
		{"weighted", withGroup(func(g *backwave.WorkerGroupOptions) {
			g.Policy = backwave.Weighted(backwave.QueueWeight{Queue: "mail", Weight: 3}, backwave.QueueWeight{Queue: "bulk", Weight: 1})
		}), true},
		{"PoolSize 0", withGroup(func(g *backwave.WorkerGroupOptions) { g.PoolSize = 0 }), false},
		{"negative PoolSize", withGroup(func(g *backwave.WorkerGroupOptions) { g.PoolSize = -1 }), false},
		{"negative LeaseDuration", withGroup(func(g *backwave.WorkerGroupOptions) { g.LeaseDuration = -time.Second }), false},
		{"negative HeartbeatInterval", withGroup(func(g *backwave.WorkerGroupOptions) { g.HeartbeatInterval = -time.Second }), false},
		{"negative PollInterval", withGroup(func(g *backwave.WorkerGroupOptions) { g.PollInterval = -time.Second }), false},
		{"negative MaintenanceInterval", withGroup(func(g *backwave.WorkerGroupOptions) { g.MaintenanceInterval = -time.Second }), false},
		{"negative MaxClaimBatch", withGroup(func(g *backwave.WorkerGroupOptions) { g.MaxClaimBatch = -1 }), false},
		{"negative MaxOutcomeBatch", withGroup(func(g *backwave.WorkerGroupOptions) { g.MaxOutcomeBatch = -1 }), false},
		{"negative Pumps", withGroup(func(g *backwave.WorkerGroupOptions) { g.Pumps = -1 }), false},
		{"several Pumps", withGroup(func(g *backwave.WorkerGroupOptions) { g.PoolSize, g.Pumps = 2, 3 }), true},
		{"HeartbeatInterval equals LeaseDuration", withGroup(func(g *backwave.WorkerGroupOptions) {
			g.LeaseDuration, g.HeartbeatInterval = 10*time.Second, 10*time.Second
		}), false},
		{"no group name", withGroup(func(g *backwave.WorkerGroupOptions) { g.Name = "" }), false},
		{"policy without queues", withGroup(func(g *backwave.WorkerGroupOptions) { g.Policy = backwave.Strict() }), false},
		{"zero policy", withGroup(func(g *backwave.WorkerGroupOptions) { g.Policy = backwave.DispatchPolicy{} }), false},
		{"duplicate group names", func(c *backwave.Config) { c.Groups = append(c.Groups, c.Groups[0]) }, false},
		{"worker queue served by no group", withGroup(func(g *backwave.WorkerGroupOptions) { g.Policy = backwave.Strict("other") }), false},
		{"groups without workers", func(c *backwave.Config) { c.Handlers = nil }, false},
		{"duplicate wire names", func(c *backwave.Config) {
			_ = backwave.AddHandlerFunc(c.Handlers, nop[otherMailArgs]) // error ignored: NewClient still refuses
		}, false},
		{"negative MaxAttempts", func(c *backwave.Config) { c.MaxAttempts = -1 }, false},
		{"negative DrainTimeout", func(c *backwave.Config) { c.DrainTimeout = -time.Second }, false},
		{"negative FailureDetailLimit", func(c *backwave.Config) { c.FailureDetailLimit = -1 }, false},
		{"invalid retry policy", func(c *backwave.Config) {
			c.RetryPolicy = backwave.RetryPolicy{Initial: time.Second, Max: time.Second, Multiplier: 0.5}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.mutate(&cfg)
			_, err := backwave.NewClient(newStore(), cfg)
			switch {
			case tc.ok && err != nil:
				t.Errorf("NewClient: %v", err)
			case !tc.ok && !errors.Is(err, backwave.ErrInvalidConfig):
				t.Errorf("NewClient err = %v, want one wrapping ErrInvalidConfig", err)
			case !tc.ok:
				t.Logf("error (as expected): %v", err)
			}
		})
	}
}

func TestAddWorkerRefusesBadRegistrations(t *testing.T) {
	t.Parallel()
	w := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(w, nop[mailArgs]); err != nil {
		t.Fatalf("first registration: %v", err)
	}
	if err := backwave.AddHandlerFunc(w, nop[otherMailArgs]); !errors.Is(err, backwave.ErrInvalidConfig) {
		t.Errorf("duplicate wire name: err = %v", err)
	}
	if err := backwave.AddHandlerFunc(backwave.NewHandlers(), nop[noWireName]); !errors.Is(err, backwave.ErrInvalidConfig) {
		t.Errorf("empty wire name: err = %v", err)
	}
	if err := backwave.AddHandlerFunc[mailArgs](backwave.NewHandlers(), nil); !errors.Is(err, backwave.ErrInvalidConfig) {
		t.Errorf("nil func: err = %v", err)
	}
	bad := backwave.RetryPolicy{Initial: -time.Second}
	w2 := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(w2, nop[mailArgs], backwave.WithRetryPolicy(bad)); err != nil {
		t.Fatal(err)
	}
	_, err := backwave.NewClient(newStore(), backwave.Config{
		Handlers: w2,
		Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("g", backwave.Strict("mail"))},
	})
	if !errors.Is(err, backwave.ErrInvalidConfig) {
		t.Errorf("invalid per-worker retry policy: err = %v", err)
	}
}

// Pointer args types register and decode too.
type ptrArgs struct{ N int }

func (*ptrArgs) WireName() string { return "test.ptr" }

func TestAddWorkerPointerArgs(t *testing.T) {
	t.Parallel()
	if err := backwave.AddHandlerFunc(backwave.NewHandlers(), nop[*ptrArgs]); err != nil {
		t.Fatalf("pointer args: %v", err)
	}
}
