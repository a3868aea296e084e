package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/internal/metricsserve"
	"github.com/backwave/backwave/store/sqlite"
)

// The demo's job types. Each shows one path through a job's life.

// sendEmail always succeeds after a little work.
type sendEmail struct {
	To string `json:"to"`
}

func (sendEmail) WireName() string { return "demo.send_email" }

func (sendEmail) JobOptions() backwave.JobOptions { return backwave.JobOptions{Queue: "mail"} }

// syncInventory fails its first Attempts (how many depends on the job) and
// then succeeds: it is retried with backoff.
type syncInventory struct {
	Store int `json:"store"`
}

func (syncInventory) WireName() string { return "demo.sync_inventory" }

func (syncInventory) JobOptions() backwave.JobOptions { return backwave.JobOptions{Queue: "inventory"} }

// chargeExpiredCard always fails; it dead-letters at its attempt ceiling.
type chargeExpiredCard struct {
	Card string `json:"card"`
}

func (chargeExpiredCard) WireName() string { return "demo.charge_expired_card" }

func (chargeExpiredCard) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: "billing", MaxAttempts: demoCardAttempts}
}

// buildReport runs long; the demo's operator cancels some of them while they
// run, and the handler stops cooperatively.
type buildReport struct {
	Seconds int `json:"seconds"`
}

func (buildReport) WireName() string { return "demo.build_report" }

func (buildReport) JobOptions() backwave.JobOptions { return backwave.JobOptions{Queue: "reports"} }

// inventoryDigest is the job the demo's Recurring Schedule mints every
// demoDigestEvery.
type inventoryDigest struct{}

func (inventoryDigest) WireName() string { return "demo.inventory_digest" }

func (inventoryDigest) JobOptions() backwave.JobOptions { return backwave.JobOptions{Queue: "digests"} }

// orderStep is one step of an order: the demo enqueues each order as a
// Workflow of demoOrderSteps, each step waiting for the one before.
type orderStep struct {
	Order int    `json:"order"`
	Step  string `json:"step"`
}

func (orderStep) WireName() string { return "demo.order_step" }

func (orderStep) JobOptions() backwave.JobOptions { return backwave.JobOptions{Queue: "orders"} }

// demoOrderSteps are an order Workflow's steps, in order.
var demoOrderSteps = []string{"reserve stock", "charge", "send receipt"}

// demoSchedule is the demo's Recurring Schedule. Every node declares it;
// each occurrence is minted once whichever node mints it.
var demoSchedule = backwave.RecurringSchedule{
	Name:      "inventory-digest",
	Cron:      "@every " + demoDigestEvery.String(),
	Args:      inventoryDigest{},
	NoOverlap: true,
}

const (
	demoNodes        = 3
	demoReportLimit  = 2
	demoCardAttempts = 3
	demoDigestEvery  = 2 * time.Second
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:      "demo",
		Usage:     "run a small fleet on an embedded SQLite file and watch jobs flow",
		UsageText: "backwave demo [--db PATH] [--for DURATION]",
		Description: "Starts " + strconv.Itoa(demoNodes) + " nodes sharing one SQLite file and enqueues a stream of example jobs, one Queue\n" +
			"per job type: emails that succeed, inventory syncs that fail and retry, card charges that\n" +
			"dead-letter, and long reports (a Queue with Concurrency Limit " + strconv.Itoa(demoReportLimit) + ") of which some are cancelled\n" +
			"while they run; a Recurring Schedule mints an inventory digest every " + demoDigestEvery.String() + ", and every second an order\n" +
			"is enqueued as a Workflow of " + strconv.Itoa(len(demoOrderSteps)) + " steps, each waiting for the one before. Progress — counts by state and throughput — refreshes in place, in colour, on a\n" +
			"terminal (NO_COLOR turns colour off) and prints a plain line a second otherwise. Without --db the\n" +
			"file is demo.db in a new temporary directory, kept afterwards. Without --for the demo runs until\n" +
			"interrupted (Ctrl-C); either way it stops gracefully and tells what became of each job type,\n" +
			"with the commands to look inside.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "the SQLite file to use (created if missing); default: demo.db in a new temporary directory"},
			&cli.DurationFlag{Name: "for", Usage: "run this long, then stop and tell what happened (e.g. 30s); default: until interrupted"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			d := cmd.Duration("for")
			if d < 0 {
				return usagef("--for %v is negative", d)
			}
			o := demoOptions{path: cmd.String("db"), duration: d, out: cmd.Root().Writer}
			if u, ok := isURI(o.path); ok {
				if u.Scheme != sqlite.Scheme {
					return usagef("the demo runs on SQLite; --db %q is not a file path or sqlite: URI", o.path)
				}
				var err error
				if o.path, o.lite, err = sqlite.ParseURI(u); err != nil {
					return usageError{err}
				}
			}
			o.self = selfCommand()
			o.dashboard = demoDashboard
			o.tty = isTerminal(o.out)
			o.colour = palette{on: o.tty && colourWanted()}
			return runDemo(ctx, o)
		},
	}
}

// demoOptions configure one demo run.
type demoOptions struct {
	// path is the SQLite file, opened with lite; empty: demo.db in a new
	// temporary directory.
	path     string
	lite     sqlite.Options
	duration time.Duration // 0: until ctx is done
	out      io.Writer
	// self is how the user runs this command, for the commands printed at
	// the end (selfCommand); empty: "backwave".
	self string
	// tty redraws the progress in place; colour paints it.
	tty    bool
	colour palette
	// dashboard, when set, serves an operator dashboard over the demo's
	// store until ctx is done and returns its URL, which the demo prints
	// with its first lines, with the fleet's Prometheus metrics beside it.
	// The command sets demoDashboard; nil serves none.
	dashboard func(ctx context.Context, s backwave.Store, metrics http.Handler) (url string, err error)
}

// runDemo runs the fleet, the enqueuer, the operator and the progress view
// until the duration is over or ctx is done, then stops everything and
// tells what happened.
func runDemo(ctx context.Context, o demoOptions) error {
	if o.path == "" {
		dir, err := os.MkdirTemp("", "backwave-demo-")
		if err != nil {
			return fmt.Errorf("create a directory for the demo database: %w", err)
		}
		o.path = filepath.Join(dir, "demo.db")
	}
	if o.self == "" {
		o.self = "backwave"
	}
	// Say something at once: opening and migrating the file comes next.
	until := "until Ctrl-C"
	if o.duration > 0 {
		until = "for " + o.duration.String()
	}
	fmt.Fprintf(o.out, "backwave demo: %d nodes on %s, %s\n", demoNodes, o.path, until)

	// One Store per node, as if each node were its own process on the host.
	var nodes []*sqlite.Store
	defer func() {
		for _, s := range nodes {
			_ = s.Close()
		}
	}()
	for range demoNodes {
		s, err := sqlite.Open(ctx, o.path, o.lite)
		if err != nil {
			return err
		}
		nodes = append(nodes, s)
	}
	logFile, err := os.OpenFile(o.path+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open the demo log: %w", err)
	}
	defer func() { _ = logFile.Close() }()
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))
	admin, err := backwave.NewAdmin(nodes[0], "demo:operator", backwave.WithQueueSetup()) // the demo sets its Queues up before their first job
	if err != nil {
		return err
	}
	if err := admin.SetQueueLimit(ctx, "reports", demoReportLimit); err != nil {
		return err
	}
	before, err := admin.CountByQueue(ctx)
	if err != nil {
		return err
	}

	metrics, err := metricsserve.New(metricsserve.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = metrics.Shutdown(context.WithoutCancel(ctx)) }()
	clients := make([]*backwave.Client, 0, demoNodes)
	for i, s := range nodes {
		c, err := newDemoClient(s, fmt.Sprintf("demo-node-%d", i+1), logger, metrics)
		if err != nil {
			return err
		}
		clients = append(clients, c)
	}
	// The Stats gauges follow the first node; the counters and histograms
	// count every node's work.
	if err := metrics.Watch(clients[0]); err != nil {
		return err
	}
	for i, c := range clients {
		if err := c.Start(context.WithoutCancel(ctx)); err != nil {
			return errors.Join(err, stopClients(ctx, clients[:i]))
		}
	}
	// --for counts from here, once the fleet runs.
	runCtx, stopRun := context.WithCancel(ctx)
	if o.duration > 0 {
		runCtx, stopRun = context.WithTimeout(ctx, o.duration)
	}
	defer stopRun()
	if o.dashboard != nil {
		url, err := o.dashboard(runCtx, nodes[0], metrics.Handler)
		if err != nil {
			return errors.Join(fmt.Errorf("demo: serve the dashboard: %w", err), stopClients(ctx, clients))
		}
		fmt.Fprintf(o.out, "dashboard: %s (grants every Permission: a demo on its own file; Prometheus metrics at /metrics), while the demo runs\n", url)
	}

	start := time.Now()
	view := &progress{out: o.out, tty: o.tty, colour: o.colour, start: start, duration: o.duration, before: byState(before)}
	var enqueued counter
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Go(func() { errs <- enqueueStream(runCtx, clients[0], &enqueued) })
	wg.Go(func() { errs <- operate(runCtx, admin) })
	wg.Go(func() { errs <- view.run(runCtx, admin, &enqueued) })
	wg.Wait()
	close(errs)
	var runErr error
	for err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			runErr = errors.Join(runErr, err)
		}
	}

	ran := time.Since(start)
	if err := stopClients(ctx, clients); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if runErr != nil {
		return runErr
	}
	st := story{out: o.out, colour: o.colour, path: o.path, self: o.self, before: before, enqueued: enqueued.get(), ran: ran, stopped: time.Since(start) - ran}
	return st.tell(context.WithoutCancel(ctx), admin)
}

// stopClients stops the nodes gracefully: running handlers get a moment,
// then the long reports are cancelled and their Leases relinquished.
func stopClients(ctx context.Context, clients []*backwave.Client) error {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	var errs error
	for _, c := range clients {
		errs = errors.Join(errs, c.Stop(stopCtx))
	}
	return errs
}

// newDemoClient registers the demo's handlers on one node.
func newDemoClient(s *sqlite.Store, name string, logger *slog.Logger, metrics *metricsserve.Metrics) (*backwave.Client, error) {
	workers, err := demoHandlers()
	if err != nil {
		return nil, err
	}
	return newDemoNode(s, name, logger, workers, metrics)
}

// demoHandlers registers the demo's job types; the Job Manifest test
// snapshots their Wire Names.
func demoHandlers() (*backwave.Handlers, error) {
	workers := backwave.NewHandlers()
	fast := backwave.RetryPolicy{Initial: 300 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2, Jitter: 0.2}
	err := errors.Join(
		backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[sendEmail]) error {
			return pause(ctx, time.Duration(5+int(j.ID)%30)*time.Millisecond)
		}),
		backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[syncInventory]) error {
			if err := pause(ctx, 20*time.Millisecond); err != nil {
				return err
			}
			if int(j.Attempt) <= 1+j.Args.Store%2 {
				return fmt.Errorf("inventory service for store %d timed out", j.Args.Store)
			}
			return nil
		}, backwave.WithRetryPolicy(fast)),
		backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[chargeExpiredCard]) error {
			if err := pause(ctx, 10*time.Millisecond); err != nil {
				return err
			}
			return fmt.Errorf("card %s: expired", j.Args.Card)
		}, backwave.WithRetryPolicy(fast)),
		backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[inventoryDigest]) error {
			return pause(ctx, 50*time.Millisecond)
		}),
		backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[orderStep]) error {
			return pause(ctx, 30*time.Millisecond)
		}),
		backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[buildReport]) error {
			if err := pause(ctx, time.Duration(j.Args.Seconds)*time.Second); err != nil {
				return fmt.Errorf("report stopped: %w", err)
			}
			j.SetOutput([]byte(`{"pages":12}`))
			return nil
		}),
	)
	return workers, err
}

// newDemoNode makes one demo node over s running workers.
func newDemoNode(s *sqlite.Store, name string, logger *slog.Logger, workers *backwave.Handlers, metrics *metricsserve.Metrics) (*backwave.Client, error) {
	group := backwave.DefaultWorkerGroup("demo", backwave.Weighted(
		backwave.QueueWeight{Queue: "mail", Weight: 3},
		backwave.QueueWeight{Queue: "inventory", Weight: 2},
		backwave.QueueWeight{Queue: "billing", Weight: 1},
		backwave.QueueWeight{Queue: "reports", Weight: 1},
		backwave.QueueWeight{Queue: "orders", Weight: 2},
		backwave.QueueWeight{Queue: "digests", Weight: 1},
	))
	group.PoolSize = 8
	group.LeaseDuration = 6 * time.Second
	group.HeartbeatInterval = time.Second
	group.PollInterval = 200 * time.Millisecond
	group.MaintenanceInterval = time.Second
	cfg := backwave.Config{
		Handlers:     workers,
		Groups:       []backwave.WorkerGroupOptions{group},
		Logger:       logger.With("node", name),
		NodeID:       name,
		DrainTimeout: time.Second,
		Schedules:    []backwave.RecurringSchedule{demoSchedule},
	}
	if metrics != nil {
		metrics.Install(&cfg)
	}
	return backwave.NewClient(s, cfg)
}

// pause waits d or until ctx is done, returning the cause then.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// counter counts enqueued jobs.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add(n int) {
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// demoTenants tag the demo's emails, for Tag Facet and Tag Suggest.
var demoTenants = []string{"acme", "globex", "initech"}

// enqueueStream enqueues a mix of jobs every 100ms until ctx is done.
func enqueueStream(ctx context.Context, c *backwave.Client, n *counter) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for round := 0; ; round++ {
		var batch []backwave.EnqueueParams
		for i := range 12 {
			n := round*12 + i
			batch = append(batch, backwave.EnqueueParams{Args: sendEmail{To: fmt.Sprintf("user%d@example.com", n)},
				Options: []backwave.EnqueueOption{backwave.WithTags(backwave.Keyed("tenant", demoTenants[n%len(demoTenants)]))}})
		}
		if round%2 == 0 {
			batch = append(batch, backwave.EnqueueParams{Args: syncInventory{Store: round / 2}})
		}
		if round%7 == 0 {
			batch = append(batch, backwave.EnqueueParams{Args: chargeExpiredCard{Card: fmt.Sprintf("4000-%04d", round)}})
		}
		if round%15 == 0 {
			batch = append(batch, backwave.EnqueueParams{Args: buildReport{Seconds: 3}})
		}
		if round%10 == 0 {
			if err := enqueueOrder(ctx, c, round/10+1, n); err != nil {
				return err
			}
		}
		if _, err := c.EnqueueMany(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("enqueue: %w", err)
		}
		n.add(len(batch))
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// enqueueOrder enqueues order k as a Workflow of demoOrderSteps, each step
// a Dependency on the step before (only after it Succeeded).
func enqueueOrder(ctx context.Context, c *backwave.Client, k int, n *counter) error {
	params := make([]backwave.EnqueueParams, len(demoOrderSteps))
	for i, step := range demoOrderSteps {
		params[i] = backwave.EnqueueParams{Args: orderStep{Order: k, Step: step}}
		if i > 0 {
			params[i].Options = []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, i-1)}
		}
	}
	if _, _, err := c.EnqueueWorkflow(ctx, backwave.NewWorkflow{Name: fmt.Sprintf("order %d", k)}, params); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("enqueue order %d: %w", k, err)
	}
	n.add(len(params))
	return nil
}

// operate plays the operator: every other long report is cancelled while it
// runs.
func operate(ctx context.Context, a *backwave.Admin) error {
	tick := time.NewTicker(700 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		running, err := a.Jobs(ctx, backwave.JobListParams{
			JobFilter: backwave.JobFilter{States: []backwave.JobState{backwave.StateRunning}, WireName: buildReport{}.WireName()},
		})
		if _, unknown := errors.AsType[*backwave.UnknownNameError](err); unknown {
			continue // no report has been enqueued yet
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err // it says what it was doing
		}
		for _, j := range running.Items {
			if j.ID%2 == 0 && !j.CancelRequested {
				if _, err := a.Cancel(ctx, j.ID); err != nil && !errors.Is(err, backwave.ErrIllegalTransition) && ctx.Err() == nil {
					return err
				}
			}
		}
	}
}
