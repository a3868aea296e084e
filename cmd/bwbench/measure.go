package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// sample is one run of one row.
type sample struct {
	jobs      int
	elapsed   time.Duration
	latencies []time.Duration
	settings  string
}

func (s sample) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.jobs) / s.elapsed.Seconds()
}

// measure runs one scenario on one target: every system that has a row,
// alternating run by run (A B C A B C …), and aggregates each system's runs.
func (b *bench) measure(ctx context.Context, sc, tg string) ([]result, error) {
	if sc == scRSS {
		if tg == tgRedis {
			return nil, nil
		}
		return b.measureRSS(ctx, tg)
	}
	var systems []system
	for _, s := range b.systems {
		if measured(s, sc, tg) {
			systems = append(systems, s)
		}
	}
	// A variant of BackWave's drain (pairedVariants) is compared with the
	// default drain measured alternately in the same loop.
	paired := -1
	if isPaired(sc) && len(systems) > 0 {
		paired = len(systems)
		systems = append(systems, pairedDrain{})
	}
	if sc == scNoisy && len(systems) > 0 {
		// Fair Claim on and off, alternately: both rows print, and the
		// Fair Claim row's ratio to the plain one is its drain cost.
		systems = append(systems, noisyPlain{})
	}
	samples := make([][]sample, len(systems))
	for r := range b.cfg.runs {
		for i, s := range systems {
			smp, err := b.once(ctx, s, sc, tg)
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", s.name(), r+1, err)
			}
			b.log.Info("run", "scenario", sc, "target", tg, "system", s.name(), "run", r+1,
				"jobs_per_sec", int(smp.rate()), "settings", smp.settings)
			samples[i] = append(samples[i], smp)
		}
	}
	var out []result
	for i, s := range systems {
		if i != paired {
			out = append(out, aggregate(sc, tg, s.name(), samples[i]))
		}
	}
	if paired >= 0 {
		base := aggregate(scDrain, tg, sysBackWave, samples[paired])
		out[0].baseline = base.JobsPerSec
		out[0].Settings += fmt.Sprintf(" (paired default drain: %.0f jobs/s)", base.JobsPerSec)
	}
	if sc == scNoisy && len(out) == 2 {
		out[0].baseline = out[1].JobsPerSec
	}
	return out, nil
}

// pairedDrain is BackWave's default drain, run alternately with a variant
// of it as that variant's baseline.
type pairedDrain struct{ backwaveSystem }

func (pairedDrain) open(ctx context.Context, b *bench, _, tg string) (instance, string, error) {
	return backwaveSystem{}.open(ctx, b, scDrain, tg)
}

// once runs one scenario once for one system on fresh storage.
func (b *bench) once(ctx context.Context, s system, sc, tg string) (smp sample, err error) {
	// The lag goes in before the system connects; the idle transaction
	// after its schema is migrated, since an index built CONCURRENTLY
	// waits for every older snapshot to end.
	undo, err := b.condition(ctx, sc, false)
	if err != nil {
		return smp, err
	}
	defer undo()
	inst, settings, err := s.open(ctx, b, baseScenario(sc), tg)
	if err != nil {
		return smp, fmt.Errorf("open: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if cerr := inst.close(cctx); cerr != nil && err == nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	smp.settings = settings
	undoAfter, err := b.condition(ctx, sc, true)
	if err != nil {
		return smp, err
	}
	defer undoAfter()
	var meter *cpuMeter
	if isPG(tg) {
		meter = b.newCPUMeter(sc+"/"+tg+"/"+s.name(), appName(s.name()))
	} else {
		meter = b.newCPUMeter(sc+"/"+tg+"/"+s.name(), "")
	}
	switch baseScenario(sc) {
	case scInsert:
		smp.jobs = b.cfg.sizes.Insert
		meter.begin(ctx)
		t0 := time.Now()
		if err := inst.bulkInsert(ctx, smp.jobs); err != nil {
			return smp, err
		}
		smp.elapsed = time.Since(t0)
		meter.end(ctx, smp.jobs)
	case scDrain, scHistoryOff, scEncrypted, scObserversIdle, scTransitionObserverIdle, scFleetSkip, scDrainBatch, scLimit, scRate:
		smp.jobs = b.drainSize(s.name(), tg)
		smp.elapsed, err = drain(ctx, inst, smp.jobs, meter)
	case scSteady:
		smp.jobs, smp.elapsed, err = steady(ctx, inst, b.cfg.sizes.SteadyWarmup, b.cfg.sizes.SteadyWindow, meter)
	case scLatencyOn, scLatencyOff:
		smp.jobs, smp.elapsed, smp.latencies, err = latency(ctx, inst, b.cfg.sizes.LatencyJobs, b.cfg.sizes.LatencyRate)
	case scNoisy:
		smp.jobs, smp.elapsed, smp.latencies, err = noisy(ctx, inst, b.cfg.sizes.Noisy, meter)
	default:
		err = fmt.Errorf("unknown scenario %q", sc)
	}
	return smp, err
}

// drainSize is the backlog of a drain run: River on SQLite completes one
// row per statement, so its backlog may be capped to keep the run short.
func (b *bench) drainSize(sys, tg string) int {
	if tg == tgMariaDB {
		return b.cfg.sizes.DrainMariaDB
	}
	if tg == tgSQLite {
		if sys == sysRiver && b.cfg.sizes.RiverSQLiteCap > 0 {
			return min(b.cfg.sizes.DrainSQLite, b.cfg.sizes.RiverSQLiteCap)
		}
		return b.cfg.sizes.DrainSQLite
	}
	return b.cfg.sizes.Drain
}

// errTimeout is returned when a run does not finish in its time bound.
var errTimeout = errors.New("run timed out")

// drain inserts n jobs before the clock starts, starts the workers and
// returns the time until the database shows every job finalized. Handler
// starts are counted to know when to start polling the database, so the
// polling does not load it during the run.
func drain(ctx context.Context, inst instance, n int, meter *cpuMeter) (time.Duration, error) {
	if err := inst.bulkInsert(ctx, n); err != nil {
		return 0, fmt.Errorf("insert the backlog: %w", err)
	}
	var worked atomic.Int64
	all := make(chan struct{})
	meter.begin(ctx)
	t0 := time.Now()
	if err := inst.start(ctx, func(int64) {
		if worked.Add(1) == int64(n) {
			close(all)
		}
	}); err != nil {
		return 0, err
	}
	limit := time.NewTimer(timeBound(n))
	defer limit.Stop()
	select {
	case <-all:
	case <-limit.C:
		return 0, fmt.Errorf("%w: %d of %d jobs worked", errTimeout, worked.Load(), n)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if err := waitNone(ctx, inst, limit.C); err != nil {
		return 0, err
	}
	elapsed := time.Since(t0)
	meter.end(ctx, n)
	return elapsed, nil
}

// timeBound is a generous bound for working n jobs.
func timeBound(n int) time.Duration { return 2*time.Minute + time.Duration(n)*2*time.Millisecond }

// waitNone polls until no job is pending.
func waitNone(ctx context.Context, inst instance, limit <-chan time.Time) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		p, err := inst.pending(ctx)
		if err != nil {
			return fmt.Errorf("count pending: %w", err)
		}
		if p == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-limit:
			return fmt.Errorf("%w: %d jobs still pending", errTimeout, p)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Steady-state producer shape: it inserts steadyBatch jobs at a time
// whenever fewer than steadyBacklog are waiting.
const (
	steadyBatch   = 1000
	steadyBacklog = 5000
)

// steady runs a producer that keeps a backlog while the workers drain, and
// returns the jobs completed (finalized in the database) during the window
// after the warm-up.
func steady(ctx context.Context, inst instance, warmup, window time.Duration, meter *cpuMeter) (int, time.Duration, error) {
	var worked atomic.Int64
	if err := inst.bulkInsert(ctx, steadyBacklog); err != nil {
		return 0, 0, fmt.Errorf("insert the first backlog: %w", err)
	}
	var mu sync.Mutex // held across each insert, so counts see whole batches
	inserted := int64(steadyBacklog)
	if err := inst.start(ctx, func(int64) { worked.Add(1) }); err != nil {
		return 0, 0, err
	}
	pctx, stop := context.WithCancel(ctx)
	prodErr := make(chan error, 1)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			mu.Lock()
			var err error
			if inserted-worked.Load() < steadyBacklog {
				if err = inst.bulkInsert(pctx, steadyBatch); err == nil {
					inserted += steadyBatch
				}
			}
			mu.Unlock()
			if err != nil {
				if pctx.Err() != nil {
					err = nil
				}
				prodErr <- err
				return
			}
			select {
			case <-pctx.Done():
				prodErr <- nil
				return
			case <-tick.C:
			}
		}
	}()
	completed := func() (int64, time.Time, error) {
		mu.Lock()
		defer mu.Unlock()
		p, err := inst.pending(ctx)
		return inserted - int64(p), time.Now(), err
	}
	fail := func(err error) (int, time.Duration, error) {
		stop()
		<-prodErr
		return 0, 0, err
	}
	if err := sleep(ctx, warmup); err != nil {
		return fail(err)
	}
	c0, t0, err := completed()
	if err != nil {
		return fail(err)
	}
	meter.begin(ctx)
	if err := sleep(ctx, window); err != nil {
		return fail(err)
	}
	c1, t1, err := completed()
	// A rate needs at least one completion in the window: on a slow
	// machine (or under the race detector) a whole claim-and-report cycle
	// may outlast a short window, so it is stretched until one lands.
	for deadline := time.Now().Add(timeBound(steadyBacklog)); err == nil && c1 == c0; {
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("%w: no job completed", errTimeout))
		}
		if err = sleep(ctx, 10*time.Millisecond); err == nil {
			c1, t1, err = completed()
		}
	}
	if err != nil {
		return fail(err)
	}
	meter.end(ctx, int(c1-c0))
	stop()
	if err := <-prodErr; err != nil {
		return 0, 0, fmt.Errorf("producer: %w", err)
	}
	return int(c1 - c0), t1.Sub(t0), nil
}

// sleep waits d or until ctx is done: the benchmark's windows are wall-clock
// time by definition.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// latency enqueues n single jobs at rate per second and returns each job's
// enqueue → handler-start time, with the rate achieved.
func latency(ctx context.Context, inst instance, n, rate int) (int, time.Duration, []time.Duration, error) {
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	all := make(chan struct{})
	if err := inst.start(ctx, func(stamp int64) {
		d := time.Duration(time.Now().UnixNano() - stamp)
		mu.Lock()
		defer mu.Unlock()
		if len(lat) < n {
			lat = append(lat, d)
			if len(lat) == n {
				close(all)
			}
		}
	}); err != nil {
		return 0, 0, nil, err
	}
	// Let the workers reach their first idle poll before the clock starts.
	if err := sleep(ctx, 200*time.Millisecond); err != nil {
		return 0, 0, nil, err
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	t0 := time.Now()
	for i := range n {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return 0, 0, nil, ctx.Err()
			}
		}
		if err := inst.enqueue(ctx, time.Now().UnixNano()); err != nil {
			return 0, 0, nil, fmt.Errorf("enqueue %d: %w", i, err)
		}
	}
	elapsed := time.Since(t0)
	limit := time.NewTimer(timeBound(n))
	defer limit.Stop()
	select {
	case <-all:
	case <-limit.C:
		mu.Lock()
		defer mu.Unlock()
		return 0, 0, nil, fmt.Errorf("%w: %d of %d jobs started", errTimeout, len(lat), n)
	case <-ctx.Done():
		return 0, 0, nil, ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	return n, elapsed, slices.Clone(lat), nil
}
