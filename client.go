package backwave

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

const levelDebug = slog.LevelDebug

// Client enqueues jobs and runs the Worker Groups of one process (one node).
// Its methods are safe for concurrent use.
type Client struct {
	store       store.Store
	log         *slog.Logger
	clock       vtime.Clock
	maxAttempts int
	pumps       []*shell.Pump
	// wakeBy lists the Pumps serving each Queue, woken after a local
	// enqueue when the store announces no Wake-Up Hints itself.
	wakeBy map[string][]*shell.Pump
	// schedules is Config.Schedules, checked; registered at Start.
	schedules []store.ScheduleDef
	retention *RetentionPolicy

	mu      sync.Mutex
	started bool
	stopped bool
}

// NewClient returns a Client over s. Configuration problems — a PoolSize
// below 1, negative intervals, a HeartbeatInterval not below LeaseDuration,
// duplicate group names or Wire Names, a registered worker whose default
// Queue no group serves, groups without workers — are errors wrapping
// ErrInvalidConfig.
func NewClient(s store.Store, cfg Config) (*Client, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no store", ErrInvalidConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = shell.WallClock{}
	}
	if cfg.RetryPolicy == (RetryPolicy{}) {
		cfg.RetryPolicy = DefaultRetryPolicy()
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.MaxOutputBytes == 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if strings.EqualFold(strings.TrimSpace(os.Getenv(FailureDetailEnv)), "off") {
		cfg.FailureDetailOff = true
	}
	switch {
	case cfg.MaxAttempts < 0:
		return nil, fmt.Errorf("%w: MaxAttempts %d is negative", ErrInvalidConfig, cfg.MaxAttempts)
	case cfg.DrainTimeout < 0:
		return nil, fmt.Errorf("%w: DrainTimeout %v is negative", ErrInvalidConfig, cfg.DrainTimeout)
	case cfg.RelinquishTimeout < 0:
		return nil, fmt.Errorf("%w: RelinquishTimeout %v is negative", ErrInvalidConfig, cfg.RelinquishTimeout)
	case cfg.FailureDetailLimit < 0:
		return nil, fmt.Errorf("%w: FailureDetailLimit %d is negative", ErrInvalidConfig, cfg.FailureDetailLimit)
	case cfg.MaxOutputBytes < 0:
		return nil, fmt.Errorf("%w: MaxOutputBytes %d is negative", ErrInvalidConfig, cfg.MaxOutputBytes)
	}
	if err := cfg.RetryPolicy.Validate(); err != nil {
		return nil, fmt.Errorf("%w: RetryPolicy: %w", ErrInvalidConfig, err)
	}
	regs, err := cfg.Handlers.snapshot()
	if err != nil {
		return nil, err
	}
	c := &Client{
		store:       s,
		log:         cfg.Logger,
		clock:       cfg.Clock,
		maxAttempts: cfg.MaxAttempts,
		wakeBy:      make(map[string][]*shell.Pump),
	}
	if err := c.checkMaintenance(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Groups) == 0 {
		return c, nil
	}
	if len(regs) == 0 {
		return nil, fmt.Errorf("%w: worker groups but no registered workers: every claimed job would be quarantined", ErrInvalidConfig)
	}
	groups, err := validateGroups(cfg.Groups, regs)
	if err != nil {
		return nil, err
	}
	retry := make(map[string]RetryPolicy)
	for wire, r := range regs {
		if r.retry == nil {
			continue
		}
		if err := r.retry.Validate(); err != nil {
			return nil, fmt.Errorf("%w: retry policy of wire name %q: %w", ErrInvalidConfig, wire, err)
		}
		retry[wire] = *r.retry
	}
	nodeID := cfg.NodeID
	if nodeID == "" {
		nodeID = defaultNodeID()
	}
	exec := &executor{byWire: regs, log: cfg.Logger, maxOutput: cfg.MaxOutputBytes, middleware: slices.Clone(cfg.Middleware), deps: s}
	if slices.ContainsFunc(exec.middleware, func(m Middleware) bool { return m == nil }) {
		return nil, fmt.Errorf("%w: nil Middleware", ErrInvalidConfig)
	}
	hints, _ := s.(store.HintSource)
	for _, g := range groups {
		for i := range g.Pumps {
			p, err := shell.New(shell.Config{
				Driver: node.Config{
					Worker:              job.WorkerID(nodeID + "/" + g.Name + "/" + strconv.Itoa(i)),
					Policy:              g.Policy,
					PoolSize:            g.PoolSize,
					LeaseDuration:       g.LeaseDuration,
					MaxClaimBatch:       g.MaxClaimBatch,
					MaxOutcomeBatch:     g.MaxOutcomeBatch,
					MaintenanceInterval: g.MaintenanceInterval,
					RetryPolicy:         cfg.RetryPolicy,
					RetryPolicies:       retry,
					// One Pump per Client mints and purges: minting is
					// idempotent across nodes, so one per node is plenty.
					Schedules: len(c.pumps) == 0,
					Retention: c.retentionFor(len(c.pumps) == 0),
				},
				Store:              s,
				Schedules:          s,
				Retention:          s,
				Hints:              hints,
				Executor:           exec,
				Clock:              cfg.Clock,
				PollInterval:       g.PollInterval,
				HeartbeatInterval:  g.HeartbeatInterval,
				DrainTimeout:       cfg.DrainTimeout,
				RelinquishTimeout:  cfg.RelinquishTimeout,
				FailureDetailLimit: cfg.FailureDetailLimit,
				FailureDetailOff:   cfg.FailureDetailOff,
				Logger:             cfg.Logger.With("group", g.Name),
			})
			if err != nil {
				return nil, fmt.Errorf("%w: worker group %q: %w", ErrInvalidConfig, g.Name, err)
			}
			c.pumps = append(c.pumps, p)
			if hints == nil {
				for _, q := range g.Policy.QueueNames() {
					c.wakeBy[q] = append(c.wakeBy[q], p)
				}
			}
		}
	}
	return c, nil
}

// validateGroups fills each group's defaults and checks the set: distinct
// names, and every registered worker's default Queue served by some group.
func validateGroups(in []WorkerGroupOptions, regs map[string]*registration) ([]WorkerGroupOptions, error) {
	out := make([]WorkerGroupOptions, 0, len(in))
	names := make(map[string]bool, len(in))
	served := make(map[string]bool)
	for _, g := range in {
		g, err := g.withDefaults()
		if err != nil {
			return nil, err
		}
		if names[g.Name] {
			return nil, fmt.Errorf("%w: two worker groups are named %q", ErrInvalidConfig, g.Name)
		}
		names[g.Name] = true
		for _, q := range g.Policy.QueueNames() {
			served[q] = true
		}
		out = append(out, g)
	}
	wires := make([]string, 0, len(regs))
	for w := range regs {
		wires = append(wires, w)
	}
	slices.Sort(wires)
	for _, w := range wires {
		if q := regs[w].queue; !served[q] {
			return nil, fmt.Errorf("%w: the default queue %q of wire name %q is served by no worker group's policy", ErrInvalidConfig, q, w)
		}
	}
	return out, nil
}

// defaultNodeID is the host name and a random suffix, so two processes on one
// host (or one restarted) never share a Worker id.
func defaultNodeID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return host + "-" + hex.EncodeToString(b[:])
}

// Start registers Config.Schedules, then starts every Worker Group's Pumps
// and returns at once. ctx's values reach every handler; cancelling it
// begins a graceful stop of the Pumps, as Stop does. A Client starts once.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.started:
		return errors.New("backwave: client already started")
	case c.stopped:
		return errors.New("backwave: client was stopped")
	}
	c.started = true
	if err := c.startMaintenance(ctx); err != nil {
		return err
	}
	for i, p := range c.pumps {
		if err := p.Start(ctx); err != nil {
			for _, q := range c.pumps[:i] {
				_ = q.Stop(context.WithoutCancel(ctx))
			}
			return fmt.Errorf("backwave: start %s: %w", p.Worker(), err)
		}
	}
	return nil
}

// Stop stops every Pump gracefully and returns once all have exited: no more
// claims, running handlers get Config.DrainTimeout to finish, then the rest
// are cancelled (cause ErrShutdown) and their Leases relinquished, best
// effort. If ctx is done first the drain is cut short and Stop returns its
// error. Stop on a Client that never started returns nil, and a stopped
// Client cannot start again.
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	started := c.started
	c.stopped = true
	c.mu.Unlock()
	if !started {
		return nil
	}
	errs := make([]error, len(c.pumps))
	var wg sync.WaitGroup
	for i, p := range c.pumps {
		wg.Go(func() { errs[i] = p.Stop(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("backwave: stop: %w", err)
	}
	return nil
}

// wakeLocal wakes this Client's Pumps serving the Queues of jobs due now,
// when the store sends no Wake-Up Hints of its own.
func (c *Client) wakeLocal(jobs []store.NewJob) {
	if len(c.wakeBy) == 0 {
		return
	}
	for _, j := range jobs {
		if !j.ScheduledAt.IsZero() && j.ScheduledAt.After(c.clock.Now()) {
			continue
		}
		for _, p := range c.wakeBy[j.Queue] {
			p.Wake()
		}
	}
}
