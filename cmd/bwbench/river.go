package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// riverSystem is River, migrated by its own migrator into its own schema
// (PostgreSQL) or file (SQLite).
type riverSystem struct{}

func (riverSystem) name() string { return sysRiver }

func (riverSystem) supports(sc, tg string) bool {
	switch tg {
	case tgPgBouncer:
		return pooledScenario(sc)
	case tgMariaDB:
		return false // River has no MySQL driver
	}
	return !isPaired(sc) && sc != scNoisy && sc != scRSS
}

// riverKnobs is River's tuning per scenario and target: MaxWorkers,
// FetchCooldown, FetchPollInterval, the pgx pool size, and the bulk-insert
// path, batch and concurrency. The drain defaults are River's own benchmark
// settings (FetchCooldown 2ms, FetchPollInterval 20ms), with MaxWorkers
// chosen among 500–2000 on this kind of machine.
func riverKnobs(sc, tg string, sz sizes) *knobs {
	k := newKnobs("workers", "1000", "cooldown", "2ms", "poll", "20ms", "conns", "8",
		"insert", "fast", "insert_batch", "5000", "insert_conc", "2")
	if tg == tgSQLite {
		// riversqlite wants a single connection (its own advice: avoid
		// SQLITE_BUSY), so inserts run one at a time.
		k.set("workers", "100")
		k.set("conns", "1")
		k.set("insert_conc", "1")
	}
	switch sc {
	case scLatencyOn:
		// Its minimum: LISTEN/NOTIFY wakes the producer, the cooldown
		// bounds how soon it may fetch again.
		k.set("workers", "100")
		k.set("cooldown", "1ms")
		k.set("poll", "1s")
	case scLatencyOff:
		k.set("workers", "100")
		k.set("cooldown", "1ms")
		k.set("poll", sz.HintsOffPoll.String())
		k.set("poll_only", "true")
	}
	if tg == tgPgBouncer {
		// Behind a transaction pooler LISTEN cannot work: River's
		// PollOnly, and for latency the poll of the hints-off row.
		k.set("poll_only", "true")
		if sc == scLatencyOn {
			k.set("poll", sz.HintsOffPoll.String())
		}
	}
	return k
}

type riverInstance struct {
	b        *bench
	tg, sc   string
	k        *knobs
	pg       *riverClient[pgx.Tx]
	lite     *riverClient[*sql.Tx]
	drop     func()
	pool     *pgxpool.Pool
	db       *sql.DB
	reader   *sql.DB
	pendingQ string
}

// riverClient is one River client with its workers, over either driver.
type riverClient[TTx any] struct {
	insertOnly *river.Client[TTx]
	worker     *river.Client[TTx]
	newWorker  func(cfg *river.Config) (*river.Client[TTx], error)
}

// noopWorker is River's noop handler.
type noopWorker struct {
	river.WorkerDefaults[noop]
	onWork func(int64)
}

func (w *noopWorker) Work(_ context.Context, j *river.Job[noop]) error {
	w.onWork(j.Args.T)
	return nil
}

func (riverSystem) open(ctx context.Context, b *bench, sc, tg string) (instance, string, error) {
	k := riverKnobs(sc, tg, b.cfg.sizes)
	if err := k.override(b.cfg.overrides[sysRiver]); err != nil {
		return nil, "", fmt.Errorf("-river: %w", err)
	}
	in := &riverInstance{b: b, tg: tg, sc: sc, k: k}
	switch tg {
	case tgPostgres, tgPgBouncer:
		schema, drop, err := b.newSchema(ctx, "river")
		if err != nil {
			return nil, "", err
		}
		in.drop = drop
		u, err := b.pgURLWith(tg, sc, k.int("conns"), sysRiver)
		if err != nil {
			drop()
			return nil, "", err
		}
		in.pool, err = pgxpool.New(ctx, u)
		if err != nil {
			drop()
			return nil, "", err
		}
		driver := riverpgxv5.New(in.pool)
		m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: b.quietLogger(sysRiver)})
		if err == nil {
			_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		}
		if err != nil {
			_ = in.close(ctx)
			return nil, "", fmt.Errorf("river migrate: %w", err)
		}
		ins, err := river.NewClient(driver, &river.Config{Schema: schema, Logger: b.quietLogger(sysRiver)})
		if err != nil {
			_ = in.close(ctx)
			return nil, "", err
		}
		in.pg = &riverClient[pgx.Tx]{insertOnly: ins, newWorker: func(cfg *river.Config) (*river.Client[pgx.Tx], error) {
			cfg.Schema = schema
			return river.NewClient(driver, cfg)
		}}
		in.pendingQ = "SELECT count(*) FROM " + schema + ".river_job WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending')"
	case tgSQLite:
		path, remove := b.newFile("river")
		in.drop = remove
		var err error
		in.db, err = sql.Open("sqlite", b.sqliteDSN(path, false))
		if err != nil {
			remove()
			return nil, "", err
		}
		in.db.SetMaxOpenConns(k.int("conns"))
		driver := riversqlite.New(in.db)
		m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: b.quietLogger(sysRiver)})
		if err == nil {
			_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		}
		if err != nil {
			_ = in.close(ctx)
			return nil, "", fmt.Errorf("river migrate: %w", err)
		}
		ins, err := river.NewClient(driver, &river.Config{Logger: b.quietLogger(sysRiver)})
		if err != nil {
			_ = in.close(ctx)
			return nil, "", err
		}
		in.lite = &riverClient[*sql.Tx]{insertOnly: ins, newWorker: func(cfg *river.Config) (*river.Client[*sql.Tx], error) {
			return river.NewClient(driver, cfg)
		}}
		if in.reader, err = b.openSQLiteReader(path); err != nil {
			_ = in.close(ctx)
			return nil, "", err
		}
		in.pendingQ = "SELECT count(*) FROM river_job WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending')"
	}
	return in, k.forScenario(sc), nil
}

// config is the worker client's configuration.
func (in *riverInstance) config(onWork func(int64)) *river.Config {
	w := river.NewWorkers()
	river.AddWorker(w, &noopWorker{onWork: onWork})
	return &river.Config{
		FetchCooldown:     in.k.dur("cooldown"),
		FetchPollInterval: in.k.dur("poll"),
		PollOnly:          in.k.str("poll_only") == "true",
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: in.k.int("workers")}},
		Workers:           w,
		Logger:            in.b.quietLogger(sysRiver),
	}
}

func (in *riverInstance) bulkInsert(ctx context.Context, n int) error {
	batch := in.k.int("insert_batch")
	conc := max(1, in.k.int("insert_conc"))
	one := func(k int) error {
		params := make([]river.InsertManyParams, k)
		for i := range params {
			params[i].Args = noop{}
		}
		fast := in.k.str("insert") == "fast"
		var err error
		switch {
		case in.pg != nil && fast:
			_, err = in.pg.insertOnly.InsertManyFast(ctx, params)
		case in.pg != nil:
			_, err = in.pg.insertOnly.InsertMany(ctx, params)
		case fast:
			_, err = in.lite.insertOnly.InsertManyFast(ctx, params)
		default:
			_, err = in.lite.insertOnly.InsertMany(ctx, params)
		}
		return err
	}
	if conc == 1 || n <= batch {
		return chunks(n, batch, one)
	}
	var wg sync.WaitGroup
	errs := make([]error, conc)
	per := (n + conc - 1) / conc
	for i := range conc {
		share := min(per, n-i*per)
		if share <= 0 {
			break
		}
		wg.Go(func() { errs[i] = chunks(share, batch, one) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (in *riverInstance) start(ctx context.Context, onWork func(int64)) error {
	var err error
	if in.pg != nil {
		in.pg.worker, err = in.pg.newWorker(in.config(onWork))
		if err == nil {
			err = in.pg.worker.Start(ctx)
		}
	} else {
		in.lite.worker, err = in.lite.newWorker(in.config(onWork))
		if err == nil {
			err = in.lite.worker.Start(ctx)
		}
	}
	return err
}

// enqueue inserts one job. With hints on it goes through the worker client,
// as an application that both inserts and works would, so River's own
// insert notification reaches its producer (in process on SQLite); with
// hints off through the insert-only client, so polling alone finds it.
func (in *riverInstance) enqueue(ctx context.Context, stamp int64) error {
	var err error
	if in.pg != nil {
		c := in.pg.insertOnly
		if in.pg.worker != nil && in.sc == scLatencyOn {
			c = in.pg.worker
		}
		_, err = c.Insert(ctx, noop{T: stamp}, nil)
	} else {
		c := in.lite.insertOnly
		if in.lite.worker != nil && in.sc == scLatencyOn {
			c = in.lite.worker
		}
		_, err = c.Insert(ctx, noop{T: stamp}, nil)
	}
	return err
}

func (in *riverInstance) pending(ctx context.Context) (int, error) {
	return in.b.count(ctx, in.reader, in.pendingQ)
}

func (in *riverInstance) close(ctx context.Context) error {
	var errs []error
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if in.pg != nil && in.pg.worker != nil {
		errs = append(errs, in.pg.worker.Stop(sctx))
	}
	if in.lite != nil && in.lite.worker != nil {
		errs = append(errs, in.lite.worker.Stop(sctx))
	}
	if in.pool != nil {
		in.pool.Close()
	}
	if in.reader != nil {
		errs = append(errs, in.reader.Close())
	}
	if in.db != nil {
		errs = append(errs, in.db.Close())
	}
	if in.drop != nil {
		in.drop()
	}
	return errors.Join(errs...)
}
