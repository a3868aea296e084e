package backwave_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
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

// newHandlers returns a registry with mailArgs's handler.
func newHandlers(t *testing.T) *backwave.Handlers {
	t.Helper()
	w := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(w, nop[mailArgs]); err != nil {
		t.Fatal(err)
	}
	return w
}

// validConfig is a Client with one Worker Group at its defaults serving
// mailArgs's Queue.
func validConfig(t *testing.T) backwave.Config {
	t.Helper()
	return backwave.Config{
		Handlers: newHandlers(t),
		Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("mail", backwave.Strict("mail"))},
	}
}

// newClientWith returns NewClient's error for validConfig after edit.
func newClientWith(t *testing.T, edit func(*backwave.Config)) error {
	t.Helper()
	cfg := validConfig(t)
	edit(&cfg)
	_, err := backwave.NewClient(newStore(), cfg)
	return err
}

// withGroup edits the Config's first Worker Group.
func withGroup(edit func(*backwave.WorkerGroupOptions)) func(*backwave.Config) {
	return func(c *backwave.Config) { edit(&c.Groups[0]) }
}

func TestNewClientValidatesConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*backwave.Config)
		ok   bool
	}{
		{"defaults", func(*backwave.Config) {}, true},
		{"struct literal with no knobs", func(c *backwave.Config) {
			c.Groups = []backwave.WorkerGroupOptions{{Name: "g", Policy: backwave.Strict("mail")}}
		}, true},
		{"insert-only", func(c *backwave.Config) { c.Groups = nil; c.Handlers = nil }, true},
		{"weighted", withGroup(func(g *backwave.WorkerGroupOptions) {
			g.Policy = backwave.Weighted(backwave.QueueWeight{Queue: "mail", Weight: 3}, backwave.QueueWeight{Queue: "bulk", Weight: 1})
		}), true},
		{"several Pumps", withGroup(func(g *backwave.WorkerGroupOptions) { g.PoolSize, g.Pumps = 2, 3 }), true},
		{"a shorter Lease from DefaultWorkerGroup", withGroup(func(g *backwave.WorkerGroupOptions) { g.LeaseDuration = 3 * time.Second }), true},
		// A handler whose default Queue no group serves is for enqueue-only use.
		{"worker queue served by no group", withGroup(func(g *backwave.WorkerGroupOptions) { g.Policy = backwave.Strict("other") }), true},
		{"groups without workers", func(c *backwave.Config) { c.Handlers = nil }, false},
		{"no free snoozes", func(c *backwave.Config) { c.SnoozeCap = backwave.NoFreeSnoozes }, true},
		{"snooze cap below NoFreeSnoozes", func(c *backwave.Config) { c.SnoozeCap = -2 }, false},
		{"a Wire Name's snooze cap of 0", func(c *backwave.Config) {
			c.Handlers = backwave.NewHandlers()
			_ = backwave.AddHandlerFunc(c.Handlers, nop[mailArgs], backwave.WithSnoozeCap(0))
		}, true},
		{"a negative Wire Name snooze cap", func(c *backwave.Config) {
			c.Handlers = backwave.NewHandlers()
			_ = backwave.AddHandlerFunc(c.Handlers, nop[mailArgs], backwave.WithSnoozeCap(-1))
		}, false},
		{"duplicate wire names", func(c *backwave.Config) {
			_ = backwave.AddHandlerFunc(c.Handlers, nop[otherMailArgs]) // error ignored: NewClient still refuses
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := newClientWith(t, tc.edit)
			switch {
			case tc.ok && err != nil:
				t.Errorf("NewClient: %v", err)
			case !tc.ok && !errors.Is(err, backwave.ErrInvalidConfig):
				t.Errorf("NewClient err = %v, want one wrapping ErrInvalidConfig", err)
			}
		})
	}
}

// TestNewClientRejectsEveryBadKnob: every knob a Worker Group or Config
// exposes, given a value no default can mend, fails NewClient with an error
// that wraps ErrInvalidConfig, says so once, and names the knob (STYLE.md,
// "One home per knob"; node-driver.txt, "The public knob panel").
func TestNewClientRejectsEveryBadKnob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		knob string // the text the error must contain
		edit func(*backwave.Config)
	}{
		{"no group Name", "Name", withGroup(func(g *backwave.WorkerGroupOptions) { g.Name = "" })},
		{"two groups with one Name", `named "mail"`, func(c *backwave.Config) { c.Groups = append(c.Groups, c.Groups[0]) }},
		{"zero Policy", "Policy", withGroup(func(g *backwave.WorkerGroupOptions) { g.Policy = backwave.DispatchPolicy{} })},
		{"Policy without queues", "Policy", withGroup(func(g *backwave.WorkerGroupOptions) { g.Policy = backwave.Strict() })},
		{"Policy with a queue twice", "Policy", withGroup(func(g *backwave.WorkerGroupOptions) { g.Policy = backwave.Strict("mail", "mail") })},
		{"Policy with a bad queue name", "Policy", withGroup(func(g *backwave.WorkerGroupOptions) { g.Policy = backwave.Strict("mail", " bad") })},
		{"Policy with weight 0", "Policy", withGroup(func(g *backwave.WorkerGroupOptions) {
			g.Policy = backwave.Weighted(backwave.QueueWeight{Queue: "mail", Weight: 0})
		})},
		{"negative PoolSize", "PoolSize -1", withGroup(func(g *backwave.WorkerGroupOptions) { g.PoolSize = -1 })},
		{"negative LeaseDuration", "LeaseDuration -1s", withGroup(func(g *backwave.WorkerGroupOptions) { g.LeaseDuration = -time.Second })},
		{"negative HeartbeatInterval", "HeartbeatInterval -1s", withGroup(func(g *backwave.WorkerGroupOptions) { g.HeartbeatInterval = -time.Second })},
		{"HeartbeatInterval equal to LeaseDuration", "HeartbeatInterval 10s", withGroup(func(g *backwave.WorkerGroupOptions) {
			g.LeaseDuration, g.HeartbeatInterval = 10*time.Second, 10*time.Second
		})},
		{"HeartbeatInterval above LeaseDuration", "HeartbeatInterval 20s", withGroup(func(g *backwave.WorkerGroupOptions) {
			g.LeaseDuration, g.HeartbeatInterval = 10*time.Second, 20*time.Second
		})},
		{"HeartbeatInterval above the default Lease", "HeartbeatInterval 2m0s", withGroup(func(g *backwave.WorkerGroupOptions) {
			g.LeaseDuration, g.HeartbeatInterval = 0, 2*time.Minute
		})},
		{"a Lease too short for a default heartbeat", "HeartbeatInterval 0s", withGroup(func(g *backwave.WorkerGroupOptions) {
			g.LeaseDuration = 2 * time.Nanosecond
		})},
		{"negative MaxClaimBatch", "MaxClaimBatch -1", withGroup(func(g *backwave.WorkerGroupOptions) { g.MaxClaimBatch = -1 })},
		{"negative MaxOutcomeBatch", "MaxOutcomeBatch -1", withGroup(func(g *backwave.WorkerGroupOptions) { g.MaxOutcomeBatch = -1 })},
		{"negative PollInterval", "PollInterval -1s", withGroup(func(g *backwave.WorkerGroupOptions) { g.PollInterval = -time.Second })},
		{"negative MaintenanceInterval", "MaintenanceInterval -1s", withGroup(func(g *backwave.WorkerGroupOptions) { g.MaintenanceInterval = -time.Second })},
		{"negative Pumps", "Pumps -1", withGroup(func(g *backwave.WorkerGroupOptions) { g.Pumps = -1 })},
		{"negative MaxAttempts", "MaxAttempts -1", func(c *backwave.Config) { c.MaxAttempts = -1 }},
		{"negative MaxOutputBytes", "MaxOutputBytes -1", func(c *backwave.Config) { c.MaxOutputBytes = -1 }},
		{"negative DrainTimeout", "DrainTimeout -1s", func(c *backwave.Config) { c.DrainTimeout = -time.Second }},
		{"negative RelinquishTimeout", "RelinquishTimeout -1s", func(c *backwave.Config) { c.RelinquishTimeout = -time.Second }},
		{"negative FailureDetailLimit", "FailureDetailLimit -1", func(c *backwave.Config) { c.FailureDetailLimit = -1 }},
		{"invalid RetryPolicy", "RetryPolicy", func(c *backwave.Config) {
			c.RetryPolicy = backwave.RetryPolicy{Initial: time.Second, Max: time.Second, Multiplier: 0.5}
		}},
		{"invalid retry policy of a Wire Name", `RetryPolicy of wire name "test.mail"`, func(c *backwave.Config) {
			c.Handlers = backwave.NewHandlers()
			if err := backwave.AddHandlerFunc(c.Handlers, nop[mailArgs], backwave.WithRetryPolicy(backwave.RetryPolicy{Initial: -time.Second})); err != nil {
				t.Fatal(err)
			}
		}},
		{"negative AttemptTimeout", "AttemptTimeout -1s", func(c *backwave.Config) { c.AttemptTimeout = -time.Second }},
		{"negative AttemptTimeoutGrace", "AttemptTimeoutGrace -1s", func(c *backwave.Config) { c.AttemptTimeoutGrace = -time.Second }},
		{"negative attempt timeout of a Wire Name", `AttemptTimeout of wire name "test.mail": -1s`, func(c *backwave.Config) {
			c.Handlers = backwave.NewHandlers()
			if err := backwave.AddHandlerFunc(c.Handlers, nop[mailArgs], backwave.WithAttemptTimeout(-time.Second)); err != nil {
				t.Fatal(err)
			}
		}},
		{"negative Retention.KeepSucceeded", "Retention.KeepSucceeded -1h0m0s", func(c *backwave.Config) {
			c.Retention = &backwave.RetentionPolicy{KeepSucceeded: -time.Hour}
		}},
		{"negative Retention.KeepDeadLettered", "Retention.KeepDeadLettered -1h0m0s", func(c *backwave.Config) {
			c.Retention = &backwave.RetentionPolicy{KeepDeadLettered: -time.Hour}
		}},
		{"negative Retention.Batch", "Retention.Batch -1", func(c *backwave.Config) {
			c.Retention = &backwave.RetentionPolicy{Batch: -1}
		}},
		{"nil Middleware", "Middleware", func(c *backwave.Config) { c.Middleware = []backwave.Middleware{nil} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := newClientWith(t, tc.edit)
			switch {
			case !errors.Is(err, backwave.ErrInvalidConfig):
				t.Fatalf("NewClient err = %v, want one wrapping ErrInvalidConfig", err)
			case !strings.Contains(err.Error(), tc.knob):
				t.Errorf("NewClient err = %q, want it to name %q", err, tc.knob)
			case strings.Count(err.Error(), backwave.ErrInvalidConfig.Error()) != 1:
				t.Errorf("NewClient err = %q says %q more than once", err, backwave.ErrInvalidConfig)
			}
		})
	}
}

// Every layer's invalid-config errors wrap the one value users match.
func TestErrInvalidConfigIsOneValue(t *testing.T) {
	t.Parallel()
	if backwave.ErrInvalidConfig != node.ErrInvalidConfig || backwave.ErrInvalidConfig != shell.ErrInvalidConfig {
		t.Fatal("backwave, shell and node export different ErrInvalidConfig values")
	}
	if _, err := node.New(node.Config{Worker: "w", Policy: node.Strict("q"), PoolSize: -1}); !errors.Is(err, backwave.ErrInvalidConfig) {
		t.Errorf("node.New: %v", err)
	}
	if _, err := shell.New(shell.Config{Driver: node.Config{Worker: "w", Policy: node.Strict("q")}}); !errors.Is(err, backwave.ErrInvalidConfig) {
		t.Errorf("shell.New: %v", err)
	}
}

// TestWorkerGroupZeroKnobsTakeDefaults: a zero knob reaches the Pump as its
// documented default, and the derived ones follow their base knob:
// HeartbeatInterval = LeaseDuration/3 and MaxOutcomeBatch = MaxClaimBatch
// (node-driver.txt, "The public knob panel" and "Outcome coalescing").
func TestWorkerGroupZeroKnobsTakeDefaults(t *testing.T) {
	t.Parallel()
	type want struct {
		pumps                               int
		pool, claim, outcome                int
		lease, heartbeat, poll, maintenance time.Duration
		drain, relinquish                   time.Duration
		detailLimit                         int
	}
	defaults := want{
		pumps: backwave.DefaultPumps, pool: backwave.DefaultPoolSize,
		claim: backwave.DefaultMaxClaimBatch, outcome: backwave.DefaultMaxClaimBatch,
		lease: backwave.DefaultLeaseDuration, heartbeat: backwave.DefaultLeaseDuration / 3,
		poll: backwave.DefaultPollInterval, maintenance: backwave.DefaultMaintenanceInterval,
		drain: backwave.DefaultDrainTimeout, relinquish: backwave.DefaultRelinquishTimeout,
		detailLimit: backwave.DefaultFailureDetailLimit,
	}
	for _, tc := range []struct {
		name  string
		group backwave.WorkerGroupOptions
		edit  func(*want)
	}{
		{"every knob zero", backwave.WorkerGroupOptions{Name: "g", Policy: backwave.Strict("mail")}, func(*want) {}},
		{"DefaultWorkerGroup", backwave.DefaultWorkerGroup("g", backwave.Strict("mail")), func(*want) {}},
		{"a Lease without a heartbeat", backwave.WorkerGroupOptions{Name: "g", Policy: backwave.Strict("mail"), LeaseDuration: 9 * time.Second},
			func(w *want) { w.lease, w.heartbeat = 9*time.Second, 3*time.Second }},
		{"a Lease and a heartbeat", backwave.WorkerGroupOptions{Name: "g", Policy: backwave.Strict("mail"), LeaseDuration: 9 * time.Second, HeartbeatInterval: 8 * time.Second},
			func(w *want) { w.lease, w.heartbeat = 9*time.Second, 8*time.Second }},
		{"a claim batch without an outcome batch", backwave.WorkerGroupOptions{Name: "g", Policy: backwave.Strict("mail"), MaxClaimBatch: 7},
			func(w *want) { w.claim, w.outcome = 7, 7 }},
		{"several Pumps", backwave.WorkerGroupOptions{Name: "g", Policy: backwave.Strict("mail"), Pumps: 3},
			func(w *want) { w.pumps = 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := defaults
			tc.edit(&w)
			c, err := backwave.NewClient(newStore(), backwave.Config{
				Handlers:  newHandlers(t),
				Groups:    []backwave.WorkerGroupOptions{tc.group},
				Retention: &backwave.RetentionPolicy{KeepSucceeded: time.Hour},
			})
			if err != nil {
				t.Fatal(err)
			}
			pumps := backwave.PumpConfigs(c)
			if len(pumps) != w.pumps {
				t.Fatalf("%d Pumps, want %d", len(pumps), w.pumps)
			}
			for i, p := range pumps {
				d := p.Driver
				got := want{
					pumps: w.pumps, pool: d.PoolSize, claim: d.MaxClaimBatch, outcome: d.MaxOutcomeBatch,
					lease: d.LeaseDuration, heartbeat: p.HeartbeatInterval, poll: p.PollInterval,
					maintenance: d.MaintenanceInterval, drain: p.DrainTimeout, relinquish: p.RelinquishTimeout,
					detailLimit: p.FailureDetailLimit,
				}
				if got != w {
					t.Errorf("Pump %d runs with\n  %+v, want\n  %+v", i, got, w)
				}
				if backwave.RetryPolicy(d.RetryPolicy) != backwave.DefaultRetryPolicy() {
					t.Errorf("Pump %d RetryPolicy %+v, want DefaultRetryPolicy()", i, d.RetryPolicy)
				}
				if i == 0 && (d.Retention == nil || d.Retention.Batch != node.DefaultPurgeBatch) {
					t.Errorf("Pump 0 Retention %+v, want Batch %d", d.Retention, node.DefaultPurgeBatch)
				}
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

// A Client serves the Queues of its own Worker Groups: a handler whose
// default Queue none of them serves is for enqueue-only use. NewClient
// accepts it, says so once in the log, and its jobs are enqueued into their
// Queue for another node to run.
func TestClientEnqueuesForAQueueItDoesNotServe(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	cfg := validConfig(t)
	cfg.Groups[0].Policy = backwave.Strict("other")
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	s := newStore()
	c, err := backwave.NewClient(s, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	if got := logs.String(); !strings.Contains(got, "wire_name=test.mail queue=mail") {
		t.Errorf("NewClient logged %q, want a line naming test.mail and its Queue mail", got)
	}
	id, err := c.Enqueue(t.Context(), mailArgs{To: "a@example.com"})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	j, err := s.JobGet(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Queue != "mail" || j.State.String() != "scheduled" {
		t.Errorf("the enqueued job is %s in Queue %q, want Scheduled in mail", j.State, j.Queue)
	}
}
