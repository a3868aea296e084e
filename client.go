package backwave

import (
	"cmp"
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
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/takeover"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

const levelDebug = slog.LevelDebug

// Store is a BackWave store as an adapter opens it: store/sqlite (the
// Embedded Adapter), store/postgres (the Networked Adapter), the In-Memory
// Store of store/memstore, or store.Open with a URI
// ("sqlite:///var/lib/app/jobs.db", "postgres://…", "mem://"). Hand it to
// NewClient and NewAdmin; their methods are the API. Its own methods are the
// Storage Contract, which adapters implement and the Conformance Suite
// checks: application code has no need to call them.
type Store = store.Store

// Client enqueues jobs and runs the Worker Groups of one process (one node).
// Its methods are safe for concurrent use.
type Client struct {
	store       store.Store
	log         *slog.Logger
	clock       vtime.Clock
	maxAttempts int
	pumps       []*shell.Pump
	// groups are the Worker Groups with their Pumps, in Config order, for
	// Stats.
	groups []groupPumps
	// obs fans the Client's events out to Config.Observers; nil when there
	// are none.
	obs *observers
	// enqueueMiddleware is Config.EnqueueMiddleware.
	enqueueMiddleware []EnqueueMiddleware
	// wakeBy lists the Pumps serving each Queue, woken after a local
	// enqueue when the store announces no Wake-Up Hints itself.
	wakeBy map[string][]*shell.Pump
	// schedules is Config.Schedules, checked; registered at Start.
	schedules []store.ScheduleDef
	retention *RetentionPolicy
	// notices are the once-per-process Start lines: &processNotices.
	notices *startNotices
	// walks are the Transition Observers' pumps, one per
	// Config.TransitionObservers entry; none when there are none.
	walks []*shell.WalkPump
	// nodeID is Config.NodeID after its default; nodeBeat is how often
	// the Client stamps its row in the node registry (nodeBeat in
	// node_registry.go); registry is that row once started.
	nodeID   string
	nodeBeat time.Duration
	registry *nodeRegistry
	// relinquishTimeout is Config.RelinquishTimeout after its default: it
	// bounds the row's removal at Stop too.
	relinquishTimeout time.Duration

	mu      sync.Mutex
	started bool
	stopped bool
}

// NewClient returns a Client over s. Its clock is Config.Clock or, when that
// is nil, the store's own (store.ClockSource) or else the host's; a store on
// a vtime.Manual clock takes no other (see Config.Clock). Configuration
// problems — a negative
// size or duration, a HeartbeatInterval not below LeaseDuration, an invalid
// Dispatch Policy or retry policy, duplicate group names or Wire Names,
// groups without workers — are errors wrapping ErrInvalidConfig that name
// the knob and its value. A Client serves the Queues of its own Worker
// Groups; a handler whose default Queue none of them serves is allowed (it
// is logged once, at Info): the Client enqueues its jobs, for use by an
// enqueue-only node or one split by Queue, and they run on whichever node
// serves that Queue. A Worker Group's knobs are checked once, by the layer that owns
// them (node.Config, node.Pacing, shell.Config), and the error says which
// group they belong to.
func NewClient(s Store, cfg Config) (*Client, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no store", ErrInvalidConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	clock, err := clockFor(s, cfg.Clock)
	if err != nil {
		return nil, err
	}
	cfg.Clock = clock
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
		return nil, fmt.Errorf("%w: MaxAttempts %d (want ≥ 0)", ErrInvalidConfig, cfg.MaxAttempts)
	case cfg.MaxOutputBytes < 0:
		return nil, fmt.Errorf("%w: MaxOutputBytes %d (want ≥ 0)", ErrInvalidConfig, cfg.MaxOutputBytes)
	case slices.ContainsFunc(cfg.Middleware, func(m Middleware) bool { return m == nil }):
		return nil, fmt.Errorf("%w: nil Middleware", ErrInvalidConfig)
	case slices.ContainsFunc(cfg.EnqueueMiddleware, func(m EnqueueMiddleware) bool { return m == nil }):
		return nil, fmt.Errorf("%w: nil EnqueueMiddleware", ErrInvalidConfig)
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
		obs:         newObservers(slices.Clone(cfg.Observers), cfg.Logger),
		notices:     &processNotices,

		enqueueMiddleware: slices.Clone(cfg.EnqueueMiddleware),
	}
	if err := c.checkMaintenance(cfg); err != nil {
		return nil, err
	}
	if cfg.NodeID == "" {
		cfg.NodeID = defaultNodeID()
	}
	c.nodeID = cfg.NodeID
	c.relinquishTimeout = cmp.Or(cfg.RelinquishTimeout, DefaultRelinquishTimeout)
	if c.nodeBeat, err = nodeBeat(cfg); err != nil {
		return nil, err
	}
	if err := c.newTransitionObservers(s, cfg, cfg.NodeID); err != nil {
		return nil, err
	}
	if len(cfg.Groups) == 0 {
		return c, nil
	}
	if len(regs) == 0 {
		return nil, fmt.Errorf("%w: worker groups but no registered workers: every claimed job would be quarantined", ErrInvalidConfig)
	}
	if err := checkBatches(regs, cfg.Groups); err != nil {
		return nil, err
	}
	p := &pumpSet{
		store:  s,
		cfg:    cfg,
		nodeID: cfg.NodeID,
		exec:   newExecutor(regs, cfg, s),
		retry:  make(map[string]core.RetryPolicy),
	}
	p.hints, _ = s.(store.HintSource)
	if p.nodeID == "" {
		p.nodeID = defaultNodeID()
	}
	for wire, r := range regs {
		if r.retry != nil {
			p.retry[wire] = core.RetryPolicy(*r.retry)
		}
		p.wireNames = append(p.wireNames, wire)
	}
	slices.Sort(p.wireNames)
	names := make(map[string]bool, len(cfg.Groups))
	for _, g := range cfg.Groups {
		switch {
		case g.Name == "":
			return nil, fmt.Errorf("%w: a worker group has no Name", ErrInvalidConfig)
		case names[g.Name]:
			return nil, fmt.Errorf("%w: two worker groups are named %q", ErrInvalidConfig, g.Name)
		}
		names[g.Name] = true
		if err := c.addGroup(p, g); err != nil {
			return nil, fmt.Errorf("worker group %q: %w", g.Name, err)
		}
	}
	for _, u := range unserved(cfg.Groups, regs) {
		cfg.Logger.Info("no worker group of this client serves the default queue of a registered wire name: "+
			"its jobs are enqueued here and run on a node that serves the queue", "wire_name", u.wire, "queue", u.queue)
	}
	return c, nil
}

// clockFor returns the Client's clock: configured, else the store's, else
// the host's. A store whose clock is a vtime.Manual only moves when its
// owner advances it, so a Client on any other clock would stamp due times
// the store never reaches — retries and delayed jobs would never come due.
func clockFor(s Store, configured Clock) (Clock, error) {
	var own vtime.Clock
	if cs, ok := s.(store.ClockSource); ok {
		own = cs.Clock()
	}
	if m, ok := own.(*vtime.Manual); ok && configured != nil {
		if c, ok := configured.(*vtime.Manual); !ok || c != m {
			return nil, fmt.Errorf("%w: Config.Clock is a %T, but the store runs on its own vtime.Manual clock, "+
				"which moves only when advanced, so due times on the two clocks would never meet: "+
				"leave Config.Clock nil to use the store's clock, or give the store the clock the Client should use "+
				"(memstore.Options{Clock: backwave.WallClock{}} for real time)", ErrInvalidConfig, configured)
		}
	}
	switch {
	case configured != nil:
		return configured, nil
	case own != nil:
		return own, nil
	}
	return WallClock{}, nil
}

// groupPumps is one Worker Group's Pumps.
type groupPumps struct {
	name   string
	queues []string
	pumps  []*shell.Pump
}

// pumpSet is what every Pump of a Client shares.
type pumpSet struct {
	store  store.Store
	cfg    Config
	nodeID string
	exec   *executor
	hints  store.HintSource
	// retry holds the Wire Names' own retry policies, unchecked: the
	// Driver's Config checks them.
	retry map[string]core.RetryPolicy
	// wireNames are the registered Wire Names, sorted: what every Pump
	// stamps in the fleet registry.
	wireNames []string
}

// addGroup builds the Pumps of group g. Its knobs are forwarded unchanged;
// shell.New fills their defaults and checks them.
func (c *Client) addGroup(p *pumpSet, g WorkerGroupOptions) error {
	n, err := g.pumps()
	if err != nil {
		return err
	}
	gp := groupPumps{name: g.Name, queues: g.Policy.QueueNames()}
	for i := range n {
		drv := g.driver()
		drv.Worker = job.WorkerID(p.nodeID + "/" + g.Name + "/" + strconv.Itoa(i))
		drv.RetryPolicy = core.RetryPolicy(p.cfg.RetryPolicy)
		drv.RetryPolicies = p.retry
		drv.WireNames, drv.HandlerGrace = p.wireNames, p.cfg.HandlerGrace
		p.setAttemptTimeouts(&drv)
		p.setSnoozeCaps(&drv)
		var obs shell.Observer
		if o := c.obs.forPump(g.Name, drv.Worker); o != nil {
			obs = o
		}
		// One Pump per Client mints and purges: minting is idempotent
		// across nodes, so one per node is plenty.
		drv.Schedules = len(c.pumps) == 0
		drv.Retention = c.retentionFor(len(c.pumps) == 0)
		pump, err := shell.New(shell.Config{
			Driver:             drv,
			Pacing:             g.pacing(p.cfg),
			Store:              p.store,
			Schedules:          p.store,
			Retention:          p.store,
			Fleet:              p.store,
			Hints:              p.hints,
			Executor:           p.exec,
			Clock:              p.cfg.Clock,
			FailureDetailLimit: p.cfg.FailureDetailLimit,
			FailureDetailOff:   p.cfg.FailureDetailOff,
			Logger:             p.cfg.Logger.With("group", g.Name),
			Observer:           obs,
		})
		if err != nil {
			return err
		}
		c.pumps = append(c.pumps, pump)
		gp.pumps = append(gp.pumps, pump)
		if p.hints == nil {
			for _, q := range g.Policy.QueueNames() {
				c.wakeBy[q] = append(c.wakeBy[q], pump)
			}
		}
	}
	c.groups = append(c.groups, gp)
	return nil
}

// unservedQueue is a registered Wire Name whose default Queue no Worker
// Group of the Client serves.
type unservedQueue struct{ wire, queue string }

// unserved lists, by Wire Name, the registered workers whose default Queue
// no group's policy serves. That is allowed: a Client enqueues into any
// Queue, and the jobs run on the nodes that serve it.
func unserved(groups []WorkerGroupOptions, regs map[string]*registration) []unservedQueue {
	served := make(map[string]bool)
	for _, g := range groups {
		for _, q := range g.Policy.QueueNames() {
			served[q] = true
		}
	}
	var out []unservedQueue
	for w, r := range regs {
		if !served[r.queue] {
			out = append(out, unservedQueue{w, r.queue})
		}
	}
	slices.SortFunc(out, func(a, b unservedQueue) int { return strings.Compare(a.wire, b.wire) })
	return out
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
// begins a graceful stop of the Pumps, as Stop does. A Client starts once:
// Start on a started Client, or on one Stop was called on (started or not),
// is an error that says which.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopped:
		return errors.New("backwave: start: the Client was stopped, and a stopped Client cannot start again (make a new one with NewClient)")
	case c.started:
		return errors.New("backwave: start: the Client is already started")
	}
	c.started = true
	if req := takeover.From(ctx); req != nil { // package jobtest (manual.go)
		return c.startManual(ctx, req)
	}
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
	for _, w := range c.walks {
		if err := w.Start(ctx); err != nil {
			return fmt.Errorf("backwave: start a transition observer: %w", err)
		}
	}
	c.registry = c.newNodeRegistry()
	c.registry.start(ctx)
	return nil
}

// NodeRegistryID is the id of this Client's row in the node registry
// (Admin.Nodes): Config.NodeID and a random suffix, fresh at each Start.
// Empty before Start, and for a Client started under package jobtest,
// which keeps no row.
func (c *Client) NodeRegistryID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.registry == nil {
		return ""
	}
	return c.registry.stamp.ID
}

// Stop stops every Pump gracefully and returns once all have exited: no more
// claims, running handlers get Config.DrainTimeout to finish, then the rest
// are cancelled (cause ErrShutdown) and their Leases relinquished, best
// effort. If ctx is done first the drain is cut short and Stop returns its
// error. If the store refused to take the Leases back, Stop returns an error
// wrapping the store's: those jobs stay Running until their Leases lapse,
// and the lapse counts as a failed Attempt. Beside the drain, Stop removes
// the Client's row from the node registry, since a stopping node claims
// nothing more (a failed removal is logged, and the row expires on its
// own). Stop on a Client that never started returns nil, and a stopped
// Client cannot start again.
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	started := c.started
	c.stopped = true
	c.mu.Unlock()
	if !started {
		return nil
	}
	errs := make([]error, len(c.pumps)+len(c.walks))
	var wg sync.WaitGroup
	// A stopping node claims nothing more: its row goes at once, beside
	// the drain, so Stop stays within DrainTimeout + RelinquishTimeout.
	wg.Go(func() { c.endRegistry(ctx) })
	for i, p := range c.pumps {
		wg.Go(func() { errs[i] = p.Stop(ctx) })
	}
	for i, w := range c.walks {
		wg.Go(func() { errs[len(c.pumps)+i] = w.Stop(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("backwave: stop: %w", err)
	}
	return nil
}

// endRegistry stops the node registry's stamps and removes the Client's
// row, best effort: even when ctx is done the removal gets
// RelinquishTimeout, since a row left behind shows a stopped node as
// expired until NodeForget.
func (c *Client) endRegistry(ctx context.Context) {
	c.mu.Lock()
	r := c.registry
	c.mu.Unlock()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.relinquishTimeout)
	defer cancel()
	r.end(ctx)
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
