package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/cmd/backwave-torture/journal"
	"github.com/backwave/backwave/store/mariadb"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// producer enqueues the workload and journals each batch twice: its intent
// before the call, the acknowledged ids after.
type producer struct {
	cfg    childConfig
	j      *journal.Writer
	c      *backwave.Client
	r      *rand.Rand
	seq    int
	recent []int64
}

func (p *producer) args(batch string, i int) workArgs {
	a := workArgs{B: batch, S: i}
	u := p.r.Float64()
	a.Ms = int(float64(p.cfg.HandlerMax.Milliseconds()) * u * u * u)
	switch f := p.r.Float64(); {
	case f < 0.02:
		a.P = true
	case f < 0.05:
		a.F = 2
	case f < 0.15:
		a.F = 1
	}
	return a
}

func modeName(m backwave.DependencyMode) string {
	if m == backwave.OnAnyTerminal {
		return "on_any_terminal"
	}
	return "on_success"
}

// enqueue sends one batch of n jobs, some of them Dependency groups, and
// journals it.
func (p *producer) enqueue(ctx context.Context, n int) error {
	p.seq++
	batch := fmt.Sprintf("%s-%d", p.cfg.Name, p.seq)
	params := make([]backwave.EnqueueParams, 0, n)
	type dep struct {
		child   int
		inBatch []int
		ids     []int64
		mode    backwave.DependencyMode
	}
	var deps []dep
	for len(params) < n {
		i := len(params)
		mode := backwave.OnSuccess
		if p.r.IntN(2) == 0 {
			mode = backwave.OnAnyTerminal
		}
		switch x := p.r.Float64(); {
		case x < 0.05 && n-i >= 3: // two parents and a dependent in the batch
			params = append(params,
				backwave.EnqueueParams{Args: p.args(batch, i), Options: []backwave.EnqueueOption{backwave.WithQueue(queueFree), backwave.WithMaxAttempts(4)}},
				backwave.EnqueueParams{Args: p.args(batch, i+1), Options: []backwave.EnqueueOption{backwave.WithQueue(queueLim), backwave.WithMaxAttempts(4)}},
				backwave.EnqueueParams{Args: p.args(batch, i+2), Options: []backwave.EnqueueOption{backwave.WithQueue(queueDep), backwave.WithMaxAttempts(4), backwave.WithParentsInBatch(mode, i, i+1)}},
			)
			deps = append(deps, dep{child: i + 2, inBatch: []int{i, i + 1}, mode: mode})
		case x < 0.07 && len(p.recent) > 0: // a dependent of an earlier batch's job
			parent := p.recent[p.r.IntN(len(p.recent))]
			params = append(params, backwave.EnqueueParams{Args: p.args(batch, i), Options: []backwave.EnqueueOption{backwave.WithQueue(queueDep), backwave.WithMaxAttempts(4), backwave.WithParents(mode, backwave.JobID(parent))}})
			deps = append(deps, dep{child: i, ids: []int64{parent}, mode: mode})
		default:
			q := queueFree
			if p.r.IntN(10) < 2 {
				q = queueLim
			}
			params = append(params, backwave.EnqueueParams{Args: p.args(batch, i), Options: []backwave.EnqueueOption{backwave.WithQueue(q), backwave.WithMaxAttempts(4)}})
		}
	}
	drop := p.cfg.Plant == plantDropJournal && p.seq == 20
	if !drop {
		p.j.Write(journal.Entry{Kind: journal.KindIntent, Batch: batch, N: int64(len(params))})
	}
	ids, err := p.c.EnqueueMany(ctx, params)
	if err != nil {
		p.j.Write(journal.Entry{Kind: journal.KindOperator, Note: "enqueue_error", Batch: batch, Detail: err.Error()})
		return fmt.Errorf("enqueue batch %s: %w", batch, err)
	}
	raw := make([]int64, len(ids))
	for i, id := range ids {
		raw[i] = int64(id)
	}
	if !drop {
		p.j.Write(journal.Entry{Kind: journal.KindEnqueue, Batch: batch, IDs: raw})
		for _, d := range deps {
			parents := d.ids
			for _, i := range d.inBatch {
				parents = append(parents, raw[i])
			}
			p.j.Write(journal.Entry{Kind: journal.KindDependency, ID: raw[d.child], Parents: parents, Mode: modeName(d.mode)})
		}
	}
	if p.cfg.Plant == plantPhantomAck && p.seq == 20 {
		p.j.Write(journal.Entry{Kind: journal.KindEnqueue, Batch: batch + "-phantom", IDs: []int64{1 << 40}, Detail: "planted: an acknowledgement the store never gave"})
	}
	for _, id := range raw {
		if len(p.recent) < 256 {
			p.recent = append(p.recent, id)
		} else {
			p.recent[p.r.IntN(len(p.recent))] = id
		}
	}
	return nil
}

// terminal returns the number of terminal jobs and of Scheduled ones.
func terminalCount(ctx context.Context, a *backwave.Admin) (term, scheduled int, err error) {
	m, err := a.CountByState(ctx, "")
	if err != nil {
		return 0, 0, fmt.Errorf("count by state: %w", err)
	}
	for st, n := range m {
		switch st {
		case backwave.StateSucceeded, backwave.StateDeadLettered, backwave.StateCancelled, backwave.StateQuarantined:
			term += n
		case backwave.StateScheduled:
			scheduled += n
		}
	}
	return term, scheduled, nil
}

// runProducer enqueues at the calm rate, keeps a backlog during the
// ceiling probe (measuring the drain rate: the ceiling), enqueues at 1.5×
// the ceiling during sustained_high_load and sends Burst jobs within about
// a second at the start of event_burst.
func runProducer(ctx context.Context, cfg childConfig, j *journal.Writer) error {
	s, err := openStore(ctx, cfg.URI)
	if err != nil {
		return err
	}
	defer s.Close()
	c, err := backwave.NewClient(s, backwave.Config{Logger: quietLogger()})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	a, err := backwave.NewAdmin(s, "torture-producer")
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	p := &producer{cfg: cfg, j: j, c: c, r: childRand(cfg)}
	const tick = 200 * time.Millisecond
	var (
		ceiling    float64
		probeStart time.Time
		probeTerm  int
		carry      float64
		bursts     = map[time.Time]bool{}
	)
	for ctx.Err() == nil {
		now := time.Now()
		cl, _ := cellAt(cfg.Cells, now)
		want := cfg.Rate * tick.Seconds()
		switch cl.Name {
		case "ceiling_probe":
			term, sched, err := terminalCount(ctx, a)
			if err == nil {
				if probeStart.IsZero() && now.Sub(cl.From) > 5*time.Second {
					probeStart, probeTerm = now, term
				} else if !probeStart.IsZero() && now.Sub(probeStart) > 5*time.Second {
					ceiling = float64(term-probeTerm) / now.Sub(probeStart).Seconds()
				}
				want = 0
				if sched < 3000 {
					want = 500
				}
			}
		case "sustained_high_load":
			if ceiling > 0 {
				want = 1.5 * ceiling * tick.Seconds()
			} else {
				want = 3 * cfg.Rate * tick.Seconds()
			}
		case "event_burst":
			if !bursts[cl.From] {
				bursts[cl.From] = true
				start := time.Now()
				sent := 0
				for sent < cfg.Burst && ctx.Err() == nil {
					n := min(1000, cfg.Burst-sent)
					if err := p.enqueue(ctx, n); err == nil {
						sent += n
					}
				}
				j.Write(journal.Entry{Kind: journal.KindOperator, Note: "burst", N: int64(sent), Detail: fmt.Sprintf("%d jobs in %s", sent, time.Since(start).Round(time.Millisecond)), Applied: true})
			}
		}
		if !probeStart.IsZero() && cl.Name != "ceiling_probe" && ceiling > 0 {
			j.Write(journal.Entry{Kind: journal.KindOperator, Note: "ceiling", N: int64(math.Round(ceiling)), Applied: true})
			probeStart = time.Time{}
		}
		carry += want
		for carry >= 1 && ctx.Err() == nil {
			n := min(int(carry), 500)
			if err := p.enqueue(ctx, n); err != nil {
				sleepCtx(ctx, tick)
				break
			}
			carry -= float64(n)
		}
		sleepCtx(ctx, time.Until(now.Add(tick)))
	}
	return nil
}

// operator performs random Operator Actions through an Admin.
type operator struct {
	a *backwave.Admin
	j *journal.Writer
	r *rand.Rand
}

func (o *operator) pick(ctx context.Context, st backwave.JobState, q string) (backwave.JobInfo, bool) {
	pg, err := o.a.Jobs(ctx, backwave.JobListParams{JobFilter: backwave.JobFilter{States: []backwave.JobState{st}, Queue: q}, PageParams: backwave.PageParams{Limit: 50}})
	if err != nil || len(pg.Items) == 0 {
		return backwave.JobInfo{}, false
	}
	return pg.Items[o.r.IntN(len(pg.Items))], true
}

func (o *operator) record(note string, id backwave.JobID, q string, err error) {
	e := journal.Entry{Kind: journal.KindOperator, Note: note, ID: int64(id), Q: q, Applied: err == nil}
	if err != nil {
		e.Detail = err.Error()
	}
	o.j.Write(e)
}

func (o *operator) setLimit(ctx context.Context, q string, n int) {
	o.j.Write(journal.Entry{Kind: journal.KindLimit, Q: q, N: int64(n), Note: "intent"})
	err := o.a.SetQueueLimit(ctx, q, n)
	if err == nil {
		o.j.Write(journal.Entry{Kind: journal.KindLimit, Q: q, N: int64(n), Note: "ack"})
	}
	o.record("set_limit", 0, q, err)
}

// runOperator performs a random Operator Action every 0.3–1.2 s: cancel a
// Scheduled or a Running job, requeue a Dead-Lettered one, reschedule a
// Scheduled one a few seconds ahead, pause a Queue for a few seconds, or
// change the Concurrency Limit of the limited Queue. On stop it resumes
// every Queue.
func runOperator(ctx context.Context, cfg childConfig, j *journal.Writer) error {
	s, err := openStore(ctx, cfg.URI)
	if err != nil {
		return err
	}
	defer s.Close()
	a, err := backwave.NewAdmin(s, "torture-operator", backwave.WithQueueSetup())
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	o := &operator{a: a, j: j, r: childRand(cfg)}
	paused := map[string]time.Time{}
	for ctx.Err() == nil {
		for q, until := range paused {
			if time.Now().After(until) {
				o.record("resume", 0, q, a.ResumeQueue(ctx, q))
				delete(paused, q)
			}
		}
		switch o.r.IntN(7) {
		case 0:
			if jb, ok := o.pick(ctx, backwave.StateScheduled, ""); ok {
				_, err := a.Cancel(ctx, jb.ID)
				o.record("cancel_scheduled", jb.ID, jb.Queue, err)
			}
		case 1:
			if jb, ok := o.pick(ctx, backwave.StateRunning, ""); ok {
				_, err := a.Cancel(ctx, jb.ID)
				o.record("cancel_running", jb.ID, jb.Queue, err)
			}
		case 2, 3:
			if jb, ok := o.pick(ctx, backwave.StateDeadLettered, ""); ok {
				_, err := a.Requeue(ctx, jb.ID)
				o.record("requeue", jb.ID, jb.Queue, err)
			}
		case 4:
			if jb, ok := o.pick(ctx, backwave.StateScheduled, ""); ok {
				_, err := a.Reschedule(ctx, jb.ID, time.Now().Add(time.Duration(o.r.IntN(5000))*time.Millisecond))
				o.record("reschedule", jb.ID, jb.Queue, err)
			}
		case 5:
			q := queues[o.r.IntN(len(queues))]
			if _, ok := paused[q]; !ok {
				err := a.PauseQueue(ctx, q)
				o.record("pause", 0, q, err)
				paused[q] = time.Now().Add(time.Duration(500+o.r.IntN(2500)) * time.Millisecond)
			}
		case 6:
			o.setLimit(ctx, queueLim, 1+o.r.IntN(8))
		}
		sleepCtx(ctx, time.Duration(300+o.r.IntN(900))*time.Millisecond)
	}
	end, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The faults are over: a roomy limit lets the limited Queue drain
	// within the liveness bound.
	o.setLimit(end, queueLim, 8)
	for _, q := range queues {
		if cfg.Plant == plantPauseForever && q == queueFree {
			o.record("pause", 0, q, a.PauseQueue(end, q))
			continue
		}
		o.record("resume", 0, q, a.ResumeQueue(end, q))
	}
	if cfg.Plant == plantPauseForever {
		c, err := backwave.NewClient(s, backwave.Config{Logger: quietLogger()})
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		p := &producer{cfg: cfg, j: j, c: c, r: o.r}
		if err := p.enqueue(end, 5); err != nil {
			return err
		}
	}
	return nil
}

// runReader is the constant reader: every 500 ms it reads the Queues and
// the Running jobs (journaling what it saw for the Concurrency-Limit and
// stuck-Running audits), the state counts and the newest page of jobs.
func runReader(ctx context.Context, cfg childConfig, j *journal.Writer) error {
	s, err := openStore(ctx, cfg.URI)
	if err != nil {
		return err
	}
	defer s.Close()
	a, err := backwave.NewAdmin(s, "torture-reader")
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	samples := 0
	for ctx.Err() == nil {
		start := time.Now()
		if qs, err := a.Queues(ctx); err == nil {
			samples++
			for _, q := range qs {
				n := int64(q.Running)
				e := journal.Entry{Kind: journal.KindQueueSample, Q: q.Name, N: n}
				if cfg.Plant == plantLeakSlot && samples == 40 && q.Name == queueLim {
					e.N, e.Detail = int64(q.Limit)+int64(max(q.Limit, 1))+1, "planted: a Running count above the limit"
				}
				j.Write(e)
			}
		}
		if pg, err := a.Jobs(ctx, backwave.JobListParams{JobFilter: backwave.JobFilter{States: []backwave.JobState{backwave.StateRunning}}, PageParams: backwave.PageParams{Limit: 1000}}); err == nil {
			t := time.Now().UnixNano()
			for _, jb := range pg.Items {
				j.Write(journal.Entry{T: t, Kind: journal.KindRunningSample, ID: int64(jb.ID), A: int64(jb.Attempt), W: jb.Worker, Lease: jb.LeaseExpiresAt.UnixNano()})
			}
		}
		_, _ = a.CountByState(ctx, "")
		_, _ = a.Jobs(ctx, backwave.JobListParams{PageParams: backwave.PageParams{Limit: 100}})
		sleepCtx(ctx, time.Until(start.Add(500*time.Millisecond)))
	}
	return nil
}

// sqliteDB opens the run's SQLite file through database/sql with the
// settings the Embedded Adapter requires of a shared *sql.DB.
func sqliteDB(uri string) (*sql.DB, string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, "", fmt.Errorf("store URI: %w", err)
	}
	path, opts, err := sqlite.ParseURI(u)
	if err != nil {
		return nil, "", fmt.Errorf("store URI: %w", err)
	}
	schema := opts.Schema
	if schema == "" {
		schema = sqlite.DefaultSchema
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(30000)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, "", fmt.Errorf("open %s: %w", path, err)
	}
	return db, schema, nil
}

// runTxKill enqueues a batch inside a transaction, journals the batch as
// doomed (it must never be seen), prints "in-tx" and waits inside the
// transaction for the coordinator's SIGKILL.
func runTxKill(ctx context.Context, cfg childConfig, j *journal.Writer) error {
	batch := fmt.Sprintf("%s-doomed", cfg.Name)
	params := make([]backwave.EnqueueParams, 20)
	for i := range params {
		params[i] = backwave.EnqueueParams{Args: workArgs{B: batch, S: i}, Options: []backwave.EnqueueOption{backwave.WithQueue(queueFree)}}
	}
	j.Write(journal.Entry{Kind: journal.KindIntent, Batch: batch, N: int64(len(params)), Note: "doomed"})
	switch cfg.Target {
	case targetSQLite:
		db, schema, err := sqliteDB(cfg.URI)
		if err != nil {
			return err
		}
		defer db.Close()
		st, err := sqlite.OpenDB(ctx, db, sqlite.Options{Schema: schema, ManualMigrate: true})
		if err != nil {
			return fmt.Errorf("open store on the shared db: %w", err)
		}
		c, err := backwave.NewClient(st, backwave.Config{Logger: quietLogger()})
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if _, err := c.EnqueueManyTx(ctx, tx, params); err != nil {
			return fmt.Errorf("enqueue in tx: %w", err)
		}
	case targetMariaDB, targetGalera:
		// The application's own *sql.DB: the store opened on it, the
		// transaction begun on it, as a Transactional Enqueue does.
		u, err := url.Parse(cfg.URI)
		if err != nil {
			return fmt.Errorf("store URI: %w", err)
		}
		mcfg, opts, err := mariadb.ParseURI(u)
		if err != nil {
			return fmt.Errorf("store URI: %w", err)
		}
		db, err := sql.Open("mysql", mcfg.FormatDSN())
		if err != nil {
			return fmt.Errorf("open: %w", err)
		}
		defer db.Close()
		st, err := mariadb.OpenDB(ctx, db, mariadb.Options{Schema: opts.Schema, ManualMigrate: true})
		if err != nil {
			return fmt.Errorf("open store on the shared db: %w", err)
		}
		c, err := backwave.NewClient(st, backwave.Config{Logger: quietLogger()})
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if _, err := c.EnqueueManyTx(ctx, tx, params); err != nil {
			return fmt.Errorf("enqueue in tx: %w", err)
		}
	default:
		s, err := openStore(ctx, cfg.URI)
		if err != nil {
			return err
		}
		u, err := url.Parse(cfg.URI)
		if err != nil {
			return fmt.Errorf("store URI: %w", err)
		}
		conn, _, err := postgres.ParseURI(u)
		if err != nil {
			return fmt.Errorf("store URI: %w", err)
		}
		pcfg, err := pgxpool.ParseConfig(conn) // it knows the pool's own parameters
		if err != nil {
			return fmt.Errorf("store URI: %w", err)
		}
		pc, err := pgx.ConnectConfig(ctx, pcfg.ConnConfig)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		c, err := backwave.NewClient(s, backwave.Config{Logger: quietLogger()})
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		tx, err := pc.Begin(ctx)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if _, err := c.EnqueueManyTx(ctx, tx, params); err != nil {
			return fmt.Errorf("enqueue in tx: %w", err)
		}
	}
	fmt.Println("in-tx")
	<-ctx.Done()
	return nil
}

// runSnapshot holds a SQLite read transaction — one snapshot — open for
// cfg.Hold, reading through it every few seconds, so the write-ahead log
// cannot be checkpointed past it.
func runSnapshot(ctx context.Context, cfg childConfig, j *journal.Writer) error {
	db, schema, err := sqliteDB(cfg.URI)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	end := time.Now().Add(cfg.Hold)
	first := int64(-1)
	for time.Now().Before(end) && ctx.Err() == nil {
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+schema+"job").Scan(&n); err != nil {
			return fmt.Errorf("read in snapshot: %w", err)
		}
		if first < 0 {
			first = n
			fmt.Println("in-snapshot")
		}
		if n != first {
			return fmt.Errorf("snapshot moved: %d jobs, then %d", first, n)
		}
		sleepCtx(ctx, 3*time.Second)
	}
	j.Write(journal.Entry{Kind: journal.KindOperator, Note: "snapshot_released", N: first, Applied: true})
	return nil
}
