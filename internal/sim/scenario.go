package sim

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// Scenario is the deterministic world of one run: topology, queues, workload
// shape, timings, the Fault Level and the Swarm configuration in force. It is
// written out in full in a Plan, so a Plan keeps its meaning even if the
// generator (NewScenario) changes; the per-job and per-Attempt details are
// regenerated from Seed by hashing each job's index and Attempt.
type Scenario struct {
	Seed  uint64 `json:"seed"`
	Level Level  `json:"level"`
	// Chaos is the window in which the workload arrives and faults apply;
	// at its end every healing fault heals and Drain-Liveness is measured
	// from there.
	Chaos  Dur         `json:"chaos"`
	Lease  Dur         `json:"lease"`
	Retry  RetrySpec   `json:"retry"`
	Nodes  []NodeSpec  `json:"nodes"`
	Queues []QueueSpec `json:"queues"`
	Work   Workload    `json:"workload"`
	// Handler shapes handler durations and results, drawn per (job,
	// Attempt).
	Handler HandlerProfile `json:"handler"`
	Swarm   Swarm          `json:"swarm"`
	// Schedules are Recurring Schedules registered at the start and
	// removed when the chaos window ends; every node mints them
	// (schedule.go).
	Schedules []ScheduleSpec `json:"schedules,omitempty"`
	// MissedAfter is every node's node.Config.MissedAfter when there are
	// Schedules.
	MissedAfter Dur `json:"missed_after,omitempty"`
	// SnoozeCap is every node's node.Config.SnoozeCap (0: the default;
	// node.NoFreeSnoozes: none free).
	SnoozeCap int `json:"snooze_cap,omitempty"`
	// Batch, if set, makes every handler a batch handler (batch.go).
	Batch *BatchSpec `json:"batch,omitempty"`
	// MintLookahead is every node's node.Config.MintLookahead (0: the
	// default, its maintenance interval).
	MintLookahead Dur `json:"mint_lookahead,omitempty"`
	// MintNodes, if positive, is how many nodes (the first ones) mint;
	// 0 means every node.
	MintNodes int `json:"mint_nodes,omitempty"`
	// Retention, if set, is every node's Retention Policy.
	Retention *RetentionSpec `json:"retention,omitempty"`
	// Mutation plants a known bug so tests can prove the oracles catch it
	// (package internal/plant); the Swarm never sets it, and a build without
	// the tag backwave_plant refuses a Plan that does.
	Mutation plant.Bug `json:"mutation,omitempty"`
	// Observers are the Transition Observers some nodes register
	// (observer.go).
	Observers []ObserverSpec `json:"observers,omitempty"`
	// Fleet, if set, makes the run a Mixed-Version Fleet, with or without
	// a migration (fleet.go).
	Fleet *FleetSpec `json:"fleet,omitempty"`
}

// RetrySpec is the retry policy every job runs under.
type RetrySpec struct {
	Initial    Dur     `json:"initial"`
	Max        Dur     `json:"max"`
	Multiplier float64 `json:"multiplier"`
	Jitter     float64 `json:"jitter"`
}

func (r RetrySpec) policy() core.RetryPolicy {
	return core.RetryPolicy{Initial: r.Initial.D(), Max: r.Max.D(), Multiplier: r.Multiplier, Jitter: r.Jitter}
}

// NodeSpec is one node: its Driver configuration (node.Config) and its
// pump's timers (shell.Config). Every incarnation of the node runs with it.
type NodeSpec struct {
	PoolSize        int `json:"pool_size"`
	MaxClaimBatch   int `json:"max_claim_batch"`
	MaxOutcomeBatch int `json:"max_outcome_batch"`
	ExpireBatch     int `json:"expire_batch"`
	// Policy is the node's Dispatch Policy over the Queues it serves.
	Policy PolicySpec `json:"policy"`
	// Poll and Heartbeat are the pump's ticker periods; Maintenance is the
	// Driver's maintenance interval.
	Poll        Dur `json:"poll"`
	Heartbeat   Dur `json:"heartbeat"`
	Maintenance Dur `json:"maintenance"`
	// DrainTimeout is how long a graceful stop waits for handlers.
	DrainTimeout Dur `json:"drain_timeout"`
	// StartAt is when the node first starts.
	StartAt Dur `json:"start_at"`
}

// QueueSpec is one Queue, its initial Concurrency Limit (0: none) and its
// initial Rate Limit: RateLimit starts per RatePeriod (0 and 0: none).
type QueueSpec struct {
	Name       string `json:"name"`
	Limit      int    `json:"limit,omitempty"`
	RateLimit  int    `json:"rate_limit,omitempty"`
	RatePeriod Dur    `json:"rate_period,omitempty"`
	// KeyLimit, KeyRateLimit per KeyRatePeriod and FairClaim are the
	// Queue's key policy (key.go); zero is none.
	KeyLimit      int  `json:"key_limit,omitempty"`
	KeyRateLimit  int  `json:"key_rate_limit,omitempty"`
	KeyRatePeriod Dur  `json:"key_rate_period,omitempty"`
	FairClaim     bool `json:"fair_claim,omitempty"`
}

// Workload is the shape of the jobs and Operator Actions of a run.
type Workload struct {
	Jobs int `json:"jobs"`
	// Batches is how many insert calls carry the jobs, spread over the
	// first part of the chaos window.
	Batches int `json:"batches"`
	// MaxAttempts bounds each job's attempt ceiling, drawn in [1, MaxAttempts].
	MaxAttempts int `json:"max_attempts"`
	// FutureProb is the share of jobs enqueued with a due time up to
	// FutureMax after their insert.
	FutureProb float64 `json:"future_prob"`
	FutureMax  Dur     `json:"future_max"`
	// CancelProb is the share of jobs an operator cancels at some point.
	CancelProb float64 `json:"cancel_prob"`
	// QueueActions is how many pause/resume or set-limit Operator Actions
	// happen; each is undone before the chaos window ends.
	QueueActions int `json:"queue_actions"`
	// RateActions is how many set-rate Operator Actions happen (rate.go);
	// each is undone before the chaos window ends.
	RateActions int `json:"rate_actions,omitempty"`
	// Deploys is how many graceful node restarts (Stop, drain, Relinquish,
	// start with a new worker id) happen.
	Deploys int `json:"deploys"`
	// Graphs shapes the Dependency graphs enqueued beside the jobs above
	// (graph.go).
	Graphs GraphWork `json:"graphs,omitzero"`
	// Keys is how many Concurrency Keys the jobs draw from (key.go); 0 is
	// none. KeyShare is the share of jobs carrying a key, KeyFlood the
	// share of those on the flooding key.
	Keys     int     `json:"keys,omitempty"`
	KeyShare float64 `json:"key_share,omitempty"`
	KeyFlood float64 `json:"key_flood,omitempty"`
}

// HandlerProfile shapes what handlers do. Durations are log-uniform in
// [Min, Max]; with LongProb a handler outlives several Leases instead.
// Results are drawn with the given weights (the rest are undecodable).
type HandlerProfile struct {
	Min          Dur     `json:"min"`
	Max          Dur     `json:"max"`
	LongProb     float64 `json:"long_prob"`
	Succeed      float64 `json:"succeed"`
	Fail         float64 `json:"fail"`
	Permanent    float64 `json:"permanent"`
	IgnoreCancel float64 `json:"ignore_cancel"`
	// Snooze is the weight of a handler returning Snooze, with a delay
	// drawn in [0, SnoozeMax] (snooze.go).
	Snooze    float64 `json:"snooze,omitempty"`
	SnoozeMax Dur     `json:"snooze_max,omitempty"`
	// CancelReaction bounds how long a handler takes to stop once
	// signalled.
	CancelReaction Dur `json:"cancel_reaction"`
}

// Size overrides the drawn node and job counts of NewScenario; zero fields
// are drawn.
type Size struct {
	Nodes int
	Jobs  int
}

// NewScenario draws the Scenario of one seed at one Fault Level: a pure
// function of its arguments. Timings are small (milliseconds to seconds) so
// runs are short in Virtual Time.
func NewScenario(seed uint64, level Level, size Size) Scenario {
	d := newDraw(seed, tagScenario)
	sc := Scenario{Seed: seed, Level: level}
	lease := d.logDur(300*time.Millisecond, 3*time.Second).Round(time.Millisecond)
	sc.Lease = Dur(lease)
	sc.Chaos = Dur(d.dur(5*time.Second, 20*time.Second).Round(time.Millisecond))
	initial := d.logDur(time.Millisecond, 100*time.Millisecond).Round(time.Millisecond)
	sc.Retry = RetrySpec{
		Initial:    Dur(initial),
		Max:        Dur(initial + d.logDur(10*time.Millisecond, 2*time.Second).Round(time.Millisecond)),
		Multiplier: 1 + float64(d.intn(21))/10,
		Jitter:     float64(d.intn(6)) / 10,
	}

	nq := d.between(1, 4)
	for i := range nq {
		q := QueueSpec{Name: fmt.Sprintf("q%d", i)}
		if d.chance(0.4) {
			q.Limit = d.between(1, 4)
		}
		sc.Queues = append(sc.Queues, q)
	}

	nodes := size.Nodes
	if nodes <= 0 {
		nodes = d.between(1, 5)
	}
	for i := range nodes {
		sc.Nodes = append(sc.Nodes, newNodeSpec(seed, i, lease, sc.Queues))
	}

	jobs := size.Jobs
	if jobs <= 0 {
		jobs = d.between(20, 300)
	}
	sc.Work = Workload{
		Jobs:         jobs,
		Batches:      d.between(1, 12),
		MaxAttempts:  d.between(1, 6),
		FutureProb:   float64(d.intn(4)) / 10,
		FutureMax:    Dur(d.dur(0, 3*time.Second).Round(time.Millisecond)),
		CancelProb:   float64(d.intn(6)) / 100,
		QueueActions: d.intn(4),
		Deploys:      d.intn(3),
		Graphs:       drawGraphWork(seed),
	}
	maxDur := d.logDur(2*time.Millisecond, 800*time.Millisecond).Round(time.Microsecond)
	fail := float64(d.intn(40)) / 100
	sc.Handler = HandlerProfile{
		Min:            Dur(maxDur / time.Duration(d.between(2, 50))),
		Max:            Dur(maxDur),
		LongProb:       float64(d.intn(3)) / 100,
		Succeed:        1 - fail - 0.03,
		Fail:           fail,
		Permanent:      0.02,
		IgnoreCancel:   float64(d.intn(5)) / 10,
		CancelReaction: Dur(d.dur(0, 50*time.Millisecond).Round(time.Millisecond)),
	}
	sc.Swarm = NewSwarm(seed, level)
	drawSchedules(&sc)
	drawRates(&sc)
	drawObservers(&sc)
	drawFleet(&sc)
	drawSnooze(&sc)
	drawKeys(&sc)
	drawBatch(&sc)
	return sc
}

func newNodeSpec(seed uint64, i int, lease time.Duration, queues []QueueSpec) NodeSpec {
	d := newDraw(seed, tagNode, uint64(i))
	pool := d.between(1, 8)
	ns := NodeSpec{
		PoolSize:        pool,
		MaxClaimBatch:   d.between(1, pool+2),
		MaxOutcomeBatch: d.between(1, 4),
		ExpireBatch:     1000,
		Poll:            Dur(d.logDur(20*time.Millisecond, 300*time.Millisecond).Round(time.Millisecond)),
		Heartbeat:       Dur((lease * time.Duration(d.between(20, 45)) / 100).Round(time.Millisecond)),
		Maintenance:     Dur(d.logDur(100*time.Millisecond, 1500*time.Millisecond).Round(time.Millisecond)),
		DrainTimeout:    Dur(d.dur(0, time.Second).Round(time.Millisecond)),
		StartAt:         Dur(d.dur(0, 200*time.Millisecond).Round(time.Millisecond)),
	}
	if d.chance(0.3) {
		ns.ExpireBatch = d.between(1, 5)
	}
	names := make([]string, len(queues))
	for k, q := range queues {
		names[k] = q.Name
	}
	// A shuffled order, so Strict nodes starve different Queues.
	for k := len(names) - 1; k > 0; k-- {
		j := d.intn(k + 1)
		names[k], names[j] = names[j], names[k]
	}
	// Node 0 serves every Queue; another node may serve only some.
	if i > 0 && len(names) > 1 && d.chance(0.3) {
		names = names[:d.between(1, len(names)-1)]
	}
	ns.Policy = PolicySpec{Kind: "strict", Queues: names}
	if d.chance(0.5) {
		ns.Policy.Kind = "weighted"
		for range names {
			ns.Policy.Weights = append(ns.Policy.Weights, d.between(1, 5))
		}
	}
	return ns
}

// Validate reports the first reason the Scenario cannot run.
func (sc *Scenario) Validate() error {
	switch {
	case sc.Level < Pristine || sc.Level > Adversarial:
		return fmt.Errorf("%w: no fault level", ErrInvalidPlan)
	case len(sc.Nodes) == 0:
		return fmt.Errorf("%w: no nodes", ErrInvalidPlan)
	case len(sc.Queues) == 0:
		return fmt.Errorf("%w: no queues", ErrInvalidPlan)
	case sc.Work.Jobs < 0 || sc.Work.Batches < 1 || sc.Work.MaxAttempts < 1:
		return fmt.Errorf("%w: workload %+v", ErrInvalidPlan, sc.Work)
	case sc.Chaos <= 0 || sc.Lease <= 0:
		return fmt.Errorf("%w: chaos %v, lease %v", ErrInvalidPlan, sc.Chaos, sc.Lease)
	case sc.Handler.Min <= 0 || sc.Handler.Max < sc.Handler.Min:
		return fmt.Errorf("%w: handler durations [%v, %v]", ErrInvalidPlan, sc.Handler.Min, sc.Handler.Max)
	case sc.Batch != nil && (sc.Batch.Size < 1 || sc.Batch.Linger < 0):
		return fmt.Errorf("%w: batch size %d, linger %v: want a size of at least 1 and a linger of at least 0", ErrInvalidPlan, sc.Batch.Size, sc.Batch.Linger.D())
	case !sc.Mutation.Known():
		return fmt.Errorf("%w: unknown mutation %q", ErrInvalidPlan, sc.Mutation)
	case sc.Mutation != plant.None && !plant.Enabled:
		return fmt.Errorf("%w: mutation %q plants a bug, which only a build with -tags backwave_plant compiles in", ErrInvalidPlan, sc.Mutation)
	}
	if err := sc.Retry.policy().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPlan, err)
	}
	known := make(map[string]bool, len(sc.Queues))
	for _, q := range sc.Queues {
		known[q.Name] = true
	}
	if err := sc.validateSchedules(known); err != nil {
		return err
	}
	if err := sc.validateKeys(); err != nil {
		return err
	}
	if err := sc.validateRates(); err != nil {
		return err
	}
	if err := sc.validateObservers(); err != nil {
		return err
	}
	if err := sc.validateFleet(); err != nil {
		return err
	}
	for i, ns := range sc.Nodes {
		if ns.Poll <= 0 || ns.Heartbeat <= 0 || ns.Heartbeat >= sc.Lease {
			return fmt.Errorf("%w: node %d: poll %v, heartbeat %v (want 0 < heartbeat < lease %v)", ErrInvalidPlan, i, ns.Poll, ns.Heartbeat, sc.Lease)
		}
		for _, q := range ns.Policy.Queues {
			if !known[q] {
				return fmt.Errorf("%w: node %d serves unknown queue %q", ErrInvalidPlan, i, q)
			}
		}
		if err := sc.nodeConfig(i, "check").Validate(); err != nil {
			return fmt.Errorf("%w: node %d: %w", ErrInvalidPlan, i, err)
		}
	}
	return nil
}

// nodeConfig is the Driver configuration of node i for one worker id.
func (sc *Scenario) nodeConfig(i int, worker job.WorkerID) node.Config {
	ns := &sc.Nodes[i]
	cfg := node.Config{
		Worker:              worker,
		Policy:              ns.Policy.dispatch(),
		PoolSize:            ns.PoolSize,
		LeaseDuration:       sc.Lease.D(),
		MaxClaimBatch:       ns.MaxClaimBatch,
		MaxOutcomeBatch:     ns.MaxOutcomeBatch,
		MaintenanceInterval: ns.Maintenance.D(),
		ExpireBatch:         ns.ExpireBatch,
		RetryPolicy:         sc.Retry.policy(),
		SnoozeCap:           sc.SnoozeCap,
	}
	plantDriver(&cfg, sc.Mutation)
	sc.maintenanceConfig(i, &cfg)
	sc.fleetConfig(i, &cfg)
	return cfg.WithDefaults()
}
