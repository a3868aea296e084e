package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
)

// The noisy-neighbour scenario: one Concurrency Key floods a Queue, then
// many small keys each enqueue a few jobs while the flood drains. It runs
// BackWave twice, alternately in the same loop: with Fair Claim on the
// Queue, and without (the plain claim, due order across keys). Each row
// reports the small keys' time to start (enqueue → handler start,
// p50/p90/p99) and the drain rate of the whole backlog; the Fair Claim
// row's ratio to the plain row is the drain cost of Fair Claim.
const (
	scNoisy = "noisy-neighbour"
	// noisyFloodKey is the flooding key.
	noisyFloodKey = "A"
)

// noisySizes are the scenario's amounts: the flood, and the small keys
// with their jobs each.
type noisySizes struct {
	Flood     int `json:"noisy_flood"`
	SmallKeys int `json:"noisy_small_keys"`
	PerKey    int `json:"noisy_per_key"`
}

// noisyPlain is the scenario's plain row: BackWave's claim of the same
// keyed backlog with Fair Claim off.
type noisyPlain struct{ backwaveSystem }

func (noisyPlain) name() string { return sysBackWave + " (fair claim off)" }

func (noisyPlain) open(ctx context.Context, b *bench, _, tg string) (instance, string, error) {
	in, _, err := backwaveSystem{}.open(ctx, b, scNoisy, tg)
	if err != nil {
		return nil, "", err
	}
	bw := in.(*backwaveInstance)
	if err := bw.setFairClaim(ctx, false); err != nil {
		_ = bw.close(ctx)
		return nil, "", err
	}
	bw.k.set("fair_claim", "off")
	return bw, bw.k.forScenario(scNoisy), nil
}

// noisy runs the scenario once on inst: sz.Flood jobs of the flooding key
// inserted before the clock starts, the workers started, and once the
// drain is under way (the first flood job started) sz.SmallKeys keys each
// enqueue sz.PerKey jobs stamped with their enqueue time. It returns every
// job's count, the time until all are finalized, and the small keys' start
// latencies.
func noisy(ctx context.Context, inst instance, sz noisySizes, meter *cpuMeter) (int, time.Duration, []time.Duration, error) {
	bw, ok := inst.(*backwaveInstance)
	if !ok {
		return 0, 0, nil, fmt.Errorf("%s runs BackWave only", scNoisy)
	}
	if err := bw.bulkInsertKeyed(ctx, sz.Flood, noisyFloodKey, 0); err != nil {
		return 0, 0, nil, fmt.Errorf("insert the flood: %w", err)
	}
	total := sz.Flood + sz.SmallKeys*sz.PerKey
	small := sz.SmallKeys * sz.PerKey
	var mu sync.Mutex
	lat := make([]time.Duration, 0, small)
	var worked atomic.Int64
	started, all := make(chan struct{}), make(chan struct{})
	var once sync.Once
	meter.begin(ctx)
	t0 := time.Now()
	if err := inst.start(ctx, func(stamp int64) {
		once.Do(func() { close(started) })
		if stamp != 0 {
			d := time.Duration(time.Now().UnixNano() - stamp)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}
		if worked.Add(1) == int64(total) {
			close(all)
		}
	}); err != nil {
		return 0, 0, nil, err
	}
	limit := time.NewTimer(timeBound(total))
	defer limit.Stop()
	if sz.Flood > 0 {
		select {
		case <-started:
		case <-limit.C:
			return 0, 0, nil, fmt.Errorf("%w: no flood job started", errTimeout)
		case <-ctx.Done():
			return 0, 0, nil, ctx.Err()
		}
	}
	for k := range sz.SmallKeys {
		if err := bw.bulkInsertKeyed(ctx, sz.PerKey, fmt.Sprintf("small-%02d", k), time.Now().UnixNano()); err != nil {
			return 0, 0, nil, fmt.Errorf("enqueue small key %d: %w", k, err)
		}
	}
	select {
	case <-all:
	case <-limit.C:
		return 0, 0, nil, fmt.Errorf("%w: %d of %d jobs worked", errTimeout, worked.Load(), total)
	case <-ctx.Done():
		return 0, 0, nil, ctx.Err()
	}
	if err := waitNone(ctx, inst, limit.C); err != nil {
		return 0, 0, nil, err
	}
	elapsed := time.Since(t0)
	meter.end(ctx, total)
	mu.Lock()
	defer mu.Unlock()
	return total, elapsed, slices.Clone(lat), nil
}

// bulkInsertKeyed enqueues n jobs of Concurrency Key key, each carrying
// stamp, in the instance's insert batches.
func (in *backwaveInstance) bulkInsertKeyed(ctx context.Context, n int, key string, stamp int64) error {
	return chunks(n, in.k.int("insert_batch"), func(k int) error {
		params := make([]backwave.EnqueueParams, k)
		for i := range params {
			params[i] = backwave.EnqueueParams{Args: noop{T: stamp}, Options: []backwave.EnqueueOption{backwave.WithConcurrencyKey(key)}}
		}
		_, err := in.producer.EnqueueMany(ctx, params)
		return err
	})
}

// setFairClaim turns Fair Claim on or off on the default Queue.
func (in *backwaveInstance) setFairClaim(ctx context.Context, fair bool) error {
	return in.st.QueueSetFairClaim(ctx, store.QueueSetFairClaimParams{Queue: backwave.DefaultQueue, Fair: fair})
}
