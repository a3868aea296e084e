package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/encrypt"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// backwaveSystem is BackWave through its public Client: the real Shell pump
// over the real adapter.
type backwaveSystem struct{}

func (backwaveSystem) name() string { return sysBackWave }

func (backwaveSystem) supports(sc, tg string) bool {
	switch tg {
	case tgPgBouncer:
		return pooledScenario(sc)
	case tgMariaDB:
		return mariaScenario(sc)
	}
	return sc != scRSS && (sc != scNoisy || tg == tgPostgres || tg == tgSQLite)
}

// backwaveKnobs is BackWave's tuning per scenario and target: the Worker
// Group's PoolSize, MaxClaimBatch, MaxOutcomeBatch, Pumps and PollInterval,
// the pgx pool size, the bulk-insert batch and concurrency, and the Job
// History Policy. On PostgreSQL two Pumps of 1000 did best among 1–4 Pumps
// of 250–1000 on a two-core machine (2 of 500, 3 of 1000 and 4 of 500
// within a few per cent): a second Pump overlaps one Pump's round trips
// with the other's handlers, larger batches spread each statement's fixed
// cost, and more Pumps add claim contention (the server's CPU per job grows
// with concurrent claimers).
func backwaveKnobs(sc, tg string, sz sizes) *knobs {
	k := newKnobs("pool", "1000", "claim", "1000", "outcome", "1000", "pumps", "2", "poll", "20ms",
		"conns", "8", "insert_batch", "5000", "insert_conc", "2", "history", store.HistoryTransitionsWithDetail.String())
	if tg == tgSQLite {
		// One write lock per file: more Pumps only queue on it, and the
		// larger the batch the fewer write transactions.
		k.set("poll", "50ms")
		k.set("pumps", "1")
		k.set("insert_conc", "1")
	}
	switch sc {
	case scHistoryOff:
		k.set("history", store.HistoryOff.String())
	case scObserversIdle:
		k.set("observers", "1")
	case scTransitionObserverIdle:
		k.set("transition_observers", "1")
	case scFleetSkip:
		k.set("fleet_skip", "bwbench.elsewhere")
	case scDrainBatch:
		k.set("batch", "100")
		k.set("linger", backwave.DefaultBatchLinger.String())
	case scLatencyOn:
		k.set("pool", "100")
		k.set("claim", "100")
		k.set("outcome", "100")
		k.set("pumps", "1")
		k.set("poll", "1s")
	case scLatencyOff:
		k.set("pool", "100")
		k.set("claim", "100")
		k.set("outcome", "100")
		k.set("pumps", "1")
		k.set("poll", sz.HintsOffPoll.String())
	}
	if tg == tgSQLite || tg == tgMariaDB {
		k.order = removeName(k.order, "conns")
	}
	return k
}

func removeName(names []string, name string) []string {
	out := names[:0:0]
	for _, n := range names {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}

// storeNoHints hides a store's Wake-Up Hints from the Client, so its Pumps
// rely on polling alone.
type storeNoHints struct{ store.Store }

type backwaveInstance struct {
	b        *bench
	tg, sc   string
	k        *knobs
	st       store.Store
	producer *backwave.Client
	client   *backwave.Client
	drop     func()
	reader   *sql.DB
	pendingQ string
	timed    *timedStore // set with -calls
}

func (backwaveSystem) open(ctx context.Context, b *bench, sc, tg string) (instance, string, error) {
	k := backwaveKnobs(sc, tg, b.cfg.sizes)
	if err := k.override(b.cfg.overrides[sysBackWave]); err != nil {
		return nil, "", fmt.Errorf("-backwave: %w", err)
	}
	in := &backwaveInstance{b: b, tg: tg, sc: sc, k: k}
	history, err := store.ParseHistoryPolicy(k.str("history"))
	if err != nil {
		return nil, "", fmt.Errorf("-backwave: %w", err)
	}
	switch tg {
	case tgPostgres, tgPgBouncer:
		schema, drop, err := b.newSchema(ctx, "bw")
		if err != nil {
			return nil, "", err
		}
		in.drop = drop
		u, err := b.pgURLWith(tg, sc, k.int("conns"), sysBackWave)
		if err != nil {
			drop()
			return nil, "", err
		}
		st, err := postgres.Open(ctx, u, postgres.Options{Schema: schema, DisableListener: sc == scLatencyOff, History: history})
		if err != nil {
			drop()
			return nil, "", err
		}
		in.st = st
		in.pendingQ = "SELECT count(*) FROM " + schema + ".job WHERE state IN ('scheduled', 'running')"
		if x := b.cfg.pgExperiment; x != "" {
			if _, err := b.pg.Exec(ctx, strings.ReplaceAll(x, "{schema}", schema)); err != nil {
				_ = st.Close()
				drop()
				return nil, "", fmt.Errorf("-backwave-pg-sql: %w", err)
			}
			k.set("pg_sql", x)
		}
	case tgMariaDB:
		if err := in.openMaria(ctx, history); err != nil {
			return nil, "", err
		}
	case tgSQLite:
		path, remove := b.newFile("backwave")
		in.drop = remove
		st, err := sqlite.Open(ctx, path, sqlite.Options{Synchronous: sqlite.Synchronous(b.cfg.sqliteSync), History: history})
		if err != nil {
			remove()
			return nil, "", err
		}
		in.st = st
		if in.reader, err = b.openSQLiteReader(path); err != nil {
			_ = st.Close()
			remove()
			return nil, "", err
		}
		in.pendingQ = "SELECT count(*) FROM backwave_job WHERE state IN (1, 3)"
	}
	if sc == scEncrypted {
		wrapped, err := encryptedStore(ctx, in.st)
		if err != nil {
			_ = in.close(ctx)
			return nil, "", err
		}
		in.st = wrapped
		k.set("encrypted", "aes-256-gcm")
	}
	if b.cfg.calls {
		in.timed = newTimedStore(in.st)
	}
	in.producer, err = backwave.NewClient(in.store(), backwave.Config{Logger: b.quietLogger(sysBackWave)})
	if err != nil {
		_ = in.close(ctx)
		return nil, "", err
	}
	if sc == scLimit {
		limit := k.int("pool") * k.int("pumps")
		if err := in.st.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: backwave.DefaultQueue, Limit: limit}); err != nil {
			_ = in.close(ctx)
			return nil, "", err
		}
		k.set("limit", fmt.Sprint(limit))
	}
	if sc == scNoisy {
		if err := in.setFairClaim(ctx, true); err != nil {
			_ = in.close(ctx)
			return nil, "", err
		}
		k.set("fair_claim", "on")
	}
	if sc == scRate {
		// A Rate Limit that never binds: the row is the cost of counting
		// starts and of the lock claims of a rated Queue take turns on.
		rate := store.QueueRate{Limit: store.MaxRateLimit, Period: time.Minute}
		if err := in.st.QueueSetRate(ctx, store.QueueSetRateParams{Queue: backwave.DefaultQueue, Rate: rate}); err != nil {
			_ = in.close(ctx)
			return nil, "", err
		}
		k.set("rate", rate.String())
	}
	return in, k.forScenario(sc), nil
}

func (in *backwaveInstance) bulkInsert(ctx context.Context, n int) error {
	batch := in.k.int("insert_batch")
	conc := max(1, in.k.int("insert_conc"))
	if conc == 1 || n <= batch {
		return chunks(n, batch, func(k int) error { return in.insertBatch(ctx, k) })
	}
	// Split the batches over conc goroutines.
	var wg sync.WaitGroup
	errs := make([]error, conc)
	per := (n + conc - 1) / conc
	for i := range conc {
		share := min(per, n-i*per)
		if share <= 0 {
			break
		}
		wg.Go(func() {
			errs[i] = chunks(share, batch, func(k int) error { return in.insertBatch(ctx, k) })
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (in *backwaveInstance) insertBatch(ctx context.Context, k int) error {
	params := make([]backwave.EnqueueParams, k)
	for i := range params {
		params[i].Args = noop{}
	}
	_, err := in.producer.EnqueueMany(ctx, params)
	return err
}

func (in *backwaveInstance) start(ctx context.Context, onWork func(int64)) error {
	h := backwave.NewHandlers()
	var err error
	if in.k.str("batch") != "" {
		b := backwave.BatchOptions{Size: in.k.int("batch"), Linger: in.k.dur("linger")}
		err = backwave.AddBatchHandlerFunc(h, b, func(_ context.Context, jobs []*backwave.Job[noop]) []error {
			for _, j := range jobs {
				onWork(j.Args.T)
			}
			return nil
		})
	} else {
		err = backwave.AddHandlerFunc(h, func(_ context.Context, j *backwave.Job[noop]) error {
			onWork(j.Args.T)
			return nil
		})
	}
	if err != nil {
		return err
	}
	worker := in.store()
	if in.sc == scLatencyOff {
		worker = storeNoHints{worker}
	}
	var observers []backwave.Observer
	if in.k.str("observers") != "" {
		for range in.k.int("observers") {
			observers = append(observers, idleObserver())
		}
	}
	var walks []backwave.TransitionObserver
	if in.k.str("transition_observers") != "" {
		for i := range in.k.int("transition_observers") {
			walks = append(walks, idleTransitionObserver(i))
		}
	}
	var grace time.Duration
	if skip := in.k.str("fleet_skip"); skip != "" {
		// Another node, live for the whole run (a stamp an hour's grace
		// keeps live), handles a Wire Name this one does not: every claim
		// skips it.
		if _, err := in.st.FleetStamp(ctx, store.FleetStampParams{Worker: "bwbench-other-node", WireNames: []string{skip}, Forget: 2 * time.Hour}); err != nil {
			return err
		}
		grace = time.Hour
	}
	c, err := backwave.NewClient(worker, backwave.Config{
		TransitionObservers: walks,
		HandlerGrace:        grace,
		Observers:           observers,
		Handlers:            h,
		Logger:              in.b.quietLogger(sysBackWave),
		NodeID:              "bwbench",
		Groups: []backwave.WorkerGroupOptions{{
			Name:            "bench",
			Policy:          backwave.Strict(backwave.DefaultQueue),
			PoolSize:        in.k.int("pool"),
			MaxClaimBatch:   in.k.int("claim"),
			MaxOutcomeBatch: in.k.int("outcome"),
			Pumps:           in.k.int("pumps"),
			PollInterval:    in.k.dur("poll"),
		}},
	})
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	in.client = c
	return nil
}

// store is the store the Clients use: the adapter, timed with -calls.
func (in *backwaveInstance) store() store.Store {
	if in.timed != nil {
		return in.timed
	}
	return in.st
}

func (in *backwaveInstance) enqueue(ctx context.Context, stamp int64) error {
	_, err := in.producer.Enqueue(ctx, noop{T: stamp})
	return err
}

func (in *backwaveInstance) pending(ctx context.Context) (int, error) {
	return in.b.count(ctx, in.reader, in.pendingQ)
}

func (in *backwaveInstance) close(ctx context.Context) error {
	var errs []error
	if in.client != nil {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		errs = append(errs, in.client.Stop(sctx))
		cancel()
	}
	if in.timed != nil {
		in.timed.print(in.b.stderr, in.sc+"/"+in.tg)
	}
	if in.reader != nil {
		errs = append(errs, in.reader.Close())
	}
	if in.st != nil {
		errs = append(errs, in.st.Close())
	}
	if in.drop != nil {
		in.drop()
	}
	return errors.Join(errs...)
}

// encryptedStore wraps st in Encryption at Rest under one fresh random key.
func encryptedStore(ctx context.Context, st store.Store) (store.Store, error) {
	key := make([]byte, encrypt.KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	keys, err := encrypt.NewKeyRing("bench", map[string][]byte{"bench": key})
	if err != nil {
		return nil, err
	}
	return encrypt.Wrap(ctx, st, keys)
}

// idleObserver is an Observer whose every callback is set and does nothing:
// what the drain-observers-idle scenario pays is the Observer path itself
// (the clock reads, the fan-out, the panic guard), not any work of its own.
func idleObserver() backwave.Observer {
	return backwave.Observer{
		JobsEnqueued:    func(context.Context, backwave.EnqueueEvent) {},
		AttemptStarted:  func(context.Context, backwave.AttemptEvent) {},
		AttemptFinished: func(context.Context, backwave.AttemptEvent) {},
		RetryScheduled:  func(context.Context, backwave.OutcomeEvent) {},
		DeadLettered:    func(context.Context, backwave.OutcomeEvent) {},
		Quarantined:     func(context.Context, backwave.OutcomeEvent) {},
		LeaseLost:       func(context.Context, backwave.LeaseEvent) {},
		Relinquished:    func(context.Context, backwave.LeaseEvent) {},
		StoreCall:       func(context.Context, backwave.StoreCallEvent) {},
	}
}

// idleTransitionObserver is a Transition Observer of the state the drain
// never reaches: its walk reads the whole Transition Log the drain writes
// and delivers nothing.
func idleTransitionObserver(i int) backwave.TransitionObserver {
	return backwave.TransitionObserver{
		Name:    fmt.Sprintf("bwbench-idle-%d", i),
		States:  []backwave.JobState{backwave.StateQuarantined},
		Observe: func(context.Context, backwave.ObservedTransition) error { return nil },
	}
}
