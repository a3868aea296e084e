package backwave_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Glossary, Transactional Enqueue: "Enqueueing a job inside the
// application's own database transaction, so the business write and the job
// commit or roll back atomically. BackWave rides along on a transaction the
// user owns — it never opens the business transaction itself." Every test
// runs on every environment of txEnvs: SQLite always, PostgreSQL (a pgx.Tx
// and a *sql.Tx through pgx's stdlib driver) when BACKWAVE_TEST_POSTGRES_URL
// is set.

// shipOrder is the job a business write enqueues.
type shipOrder struct {
	Order int `json:"order"`
}

func (shipOrder) WireName() string { return "test.ship_order" }

func (shipOrder) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: "orders", MaxAttempts: 4, Tags: []backwave.Tag{backwave.Label("shop")}}
}

// txWait bounds every wait of these tests, which run on the wall clock
// against real databases.
const txWait = 30 * time.Second

// runOrders starts a Client working the orders Queue with handle.
func runOrders(t *testing.T, st store.Store, handle func(ctx context.Context, j *backwave.Job[shipOrder]) error) *backwave.Client {
	t.Helper()
	h := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(h, handle); err != nil {
		t.Fatal(err)
	}
	g := group("orders", "orders")
	g.PollInterval = 50 * time.Millisecond
	return startClient(t, st, backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{g}})
}

// receive waits for a value on ch.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(txWait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// assertGone fails unless no job of ids exists and the store holds no job
// in queue (in any Queue if queue is empty).
func assertGone(t *testing.T, st store.Store, queue string, ids ...backwave.JobID) {
	t.Helper()
	for _, id := range ids {
		if j, err := st.JobGet(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("JobGet(%d) = %+v, %v; want store.ErrNotFound", id, j, err)
		}
	}
	counts, err := st.JobCountByState(t.Context(), store.CountParams{Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	for state, n := range counts {
		if n != 0 {
			t.Errorf("%d job(s) %s, want none", n, state)
		}
	}
}

// TestEnqueueTxCommitRuns: a job enqueued beside a business write is
// invisible until the commit, then a Worker Group runs it.
func TestEnqueueTxCommitRuns(t *testing.T) {
	t.Parallel()
	eachTxEnv(t, func(t *testing.T, e *txEnv) {
		ctx := t.Context()
		ran := make(chan *backwave.Job[shipOrder], 1)
		c := runOrders(t, e.store, func(_ context.Context, j *backwave.Job[shipOrder]) error {
			ran <- j
			return nil
		})
		tx := e.begin(t)
		if err := tx.exec(e.insertOrder(1)); err != nil {
			t.Fatal(err)
		}
		id, err := c.EnqueueTx(ctx, tx.tx, shipOrder{Order: 1})
		if err != nil {
			t.Fatalf("EnqueueTx: %v", err)
		}
		if _, err := e.store.JobGet(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("JobGet(%d) before the commit: %v, want store.ErrNotFound", id, err)
		}
		if err := tx.commit(); err != nil {
			t.Fatal(err)
		}
		j := receive(t, ran, "the committed job to run")
		if j.ID != id || j.Args.Order != 1 || j.Attempt != 1 || j.AttemptCeiling != 4 {
			t.Fatalf("ran job %d %+v at Attempt %d with ceiling %d; want job %d, order 1, Attempt 1 with ceiling 4", j.ID, j.Args, j.Attempt, j.AttemptCeiling, id)
		}
		if err := c.Stop(ctx); err != nil { // drains: the outcome is reported
			t.Fatal(err)
		}
		if got := getJob(t, e.store, id); got.State != job.StateSucceeded {
			t.Fatalf("job %d is %s after its run, want succeeded", id, got.State)
		}
		if n := e.rows(t); n != 1 {
			t.Fatalf("%d orders after the commit, want 1", n)
		}
	})
}

// TestEnqueueTxRollbackLeavesNothing: rolled back, the jobs never existed —
// not by id, not in the counts — and no Wake-Up Hint named them.
func TestEnqueueTxRollbackLeavesNothing(t *testing.T) {
	t.Parallel()
	eachTxEnv(t, func(t *testing.T, e *txEnv) {
		ctx := t.Context()
		c, hints := listenHints(t, e.store)
		tx := e.begin(t)
		if err := tx.exec(e.insertOrder(1)); err != nil {
			t.Fatal(err)
		}
		ids, err := c.EnqueueManyTx(ctx, tx.tx, []backwave.EnqueueParams{
			{Args: shipOrder{Order: 1}, Options: []backwave.EnqueueOption{backwave.WithQueue("rolled-back")}},
			{Args: shipOrder{Order: 2}, Options: []backwave.EnqueueOption{backwave.WithQueue("rolled-back"), backwave.WithParentsInBatch(backwave.OnSuccess, 0)}},
		})
		if err != nil {
			t.Fatalf("EnqueueManyTx: %v", err)
		}
		if err := tx.rollback(); err != nil {
			t.Fatal(err)
		}
		assertGone(t, e.store, "rolled-back", ids...)
		if n := e.rows(t); n != 0 {
			t.Fatalf("%d orders after the rollback, want 0", n)
		}
		// Hints of one store arrive in commit order: once a later
		// commit's hint is in, a hint of the rolled-back jobs would be too.
		if _, err := c.Enqueue(ctx, shipOrder{Order: 3}, backwave.WithQueue("marker")); err != nil {
			t.Fatal(err)
		}
		if got := hints.until(t, "marker"); slices.Contains(got, "rolled-back") {
			t.Fatalf("hints %q name the rolled-back Queue", got)
		}
	})
}

// TestEnqueueTxHintsOnlyAfterCommit (glossary, Wake-Up Hint): no hint
// announces a job before its transaction commits. PostgreSQL's NOTIFY goes
// out at the commit; SQLite and MariaDB send none, and the next poll finds
// the job (TestEnqueueTxCommitRuns).
func TestEnqueueTxHintsOnlyAfterCommit(t *testing.T) {
	t.Parallel()
	eachTxEnv(t, func(t *testing.T, e *txEnv) {
		ctx := t.Context()
		c, hints := listenHints(t, e.store)
		tx := e.begin(t)
		if _, err := c.EnqueueTx(ctx, tx.tx, shipOrder{Order: 1}, backwave.WithQueue("in-tx")); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(e.name, "sqlite") || strings.HasPrefix(e.name, "mariadb") {
			// SQLite's hints are announced before the call returns, and no
			// other write can commit while tx holds the file's write lock
			// (MariaDB's: the writer row, store/mariadb's Commit order).
			if got := hints.snapshot(); slices.Contains(got, "in-tx") {
				t.Fatalf("hints %q name the Queue of an uncommitted job", got)
			}
		} else {
			if _, err := c.Enqueue(ctx, shipOrder{Order: 2}, backwave.WithQueue("before-commit")); err != nil {
				t.Fatal(err)
			}
			if got := hints.until(t, "before-commit"); slices.Contains(got, "in-tx") {
				t.Fatalf("hints %q name the Queue of an uncommitted job", got)
			}
		}
		if err := tx.commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Enqueue(ctx, shipOrder{Order: 3}, backwave.WithQueue("after-commit")); err != nil {
			t.Fatal(err)
		}
		got := hints.until(t, "after-commit")
		if want := strings.HasPrefix(e.name, "postgres"); slices.Contains(got, "in-tx") != want {
			t.Fatalf("hints %q after the commit; want the in-tx Queue among them: %v", got, want)
		}
	})
}

// TestEnqueueTxBusinessErrorRollsBack: the business transaction fails after
// the enqueue (a duplicate key), the application rolls back, and neither
// the business row nor the job exists.
func TestEnqueueTxBusinessErrorRollsBack(t *testing.T) {
	t.Parallel()
	eachTxEnv(t, func(t *testing.T, e *txEnv) {
		ctx := t.Context()
		c := runOrders(t, e.store, func(context.Context, *backwave.Job[shipOrder]) error {
			t.Error("a rolled-back job ran")
			return nil
		})
		var id backwave.JobID
		placeOrder := func(tx appTx) error {
			if err := tx.exec(e.insertOrder(1)); err != nil {
				return err
			}
			var err error
			if id, err = c.EnqueueTx(ctx, tx.tx, shipOrder{Order: 1}); err != nil {
				return err
			}
			return tx.exec(e.insertOrder(1))
		}
		tx := e.begin(t)
		if err := placeOrder(tx); err == nil {
			t.Fatal("the duplicate business row was accepted")
		}
		if err := tx.rollback(); err != nil {
			t.Fatal(err)
		}
		if id == 0 {
			t.Fatal("EnqueueTx returned no id")
		}
		assertGone(t, e.store, "", id)
		if n := e.rows(t); n != 0 {
			t.Fatalf("%d orders after the rollback, want 0", n)
		}
	})
}

// TestEnqueueManyTxGraph (glossary, Dependency): a whole graph goes in with
// the business write — a parent enqueued earlier in the same transaction
// (WithParents), and fan-out/fan-in inside one call (WithParentsInBatch) —
// and runs in Dependency order once committed.
func TestEnqueueManyTxGraph(t *testing.T) {
	t.Parallel()
	eachTxEnv(t, func(t *testing.T, e *txEnv) {
		ctx := t.Context()
		ran := make(chan int, 5)
		c := runOrders(t, e.store, func(_ context.Context, j *backwave.Job[shipOrder]) error {
			ran <- j.Args.Order
			return nil
		})
		tx := e.begin(t)
		if err := tx.exec(e.insertOrder(1)); err != nil {
			t.Fatal(err)
		}
		first, err := c.EnqueueTx(ctx, tx.tx, shipOrder{Order: 0})
		if err != nil {
			t.Fatal(err)
		}
		ids, err := c.EnqueueManyTx(ctx, tx.tx, []backwave.EnqueueParams{
			{Args: shipOrder{Order: 1}, Options: []backwave.EnqueueOption{backwave.WithParents(backwave.OnSuccess, first)}},
			{Args: shipOrder{Order: 2}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 0)}},
			{Args: shipOrder{Order: 3}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 0)}},
			{Args: shipOrder{Order: 4}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnAnyTerminal, 1, 2)}},
		})
		if err != nil {
			t.Fatalf("EnqueueManyTx: %v", err)
		}
		if err := tx.commit(); err != nil {
			t.Fatal(err)
		}
		var order []int
		for range 5 {
			order = append(order, receive(t, ran, "the graph to run"))
		}
		pos := func(n int) int { return slices.Index(order, n) }
		if pos(0) != 0 || pos(1) != 1 || pos(4) != 4 {
			t.Fatalf("ran orders %v; want 0, then 1, then 2 and 3, then 4", order)
		}
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range append([]backwave.JobID{first}, ids...) {
			if got := getJob(t, e.store, id); got.State != job.StateSucceeded {
				t.Fatalf("job %d is %s, want succeeded", id, got.State)
			}
		}
	})
}

// hintLog records the Wake-Up Hints a store announces.
type hintLog struct {
	mu   sync.Mutex
	seen []string
	news chan struct{}
}

// listenHints returns a Client without Worker Groups over st, and the log
// of st's hints (st must be a store.HintSource) once the subscription is
// live: on PostgreSQL the listener connects in the background, so the hint
// of a first committed insert is awaited.
func listenHints(t *testing.T, st store.Store) (*backwave.Client, *hintLog) {
	t.Helper()
	hs, ok := st.(store.HintSource)
	if !ok {
		t.Fatalf("%T announces no Wake-Up Hints", st)
	}
	h := &hintLog{news: make(chan struct{}, 1)}
	t.Cleanup(hs.SubscribeHints(func(q string) {
		h.mu.Lock()
		h.seen = append(h.seen, q)
		h.mu.Unlock()
		select {
		case h.news <- struct{}{}:
		default:
		}
	}))
	c, err := backwave.NewClient(st, backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(t.Context(), shipOrder{}, backwave.WithQueue("warm-up")); err != nil {
		t.Fatal(err)
	}
	h.until(t, "warm-up")
	return c, h
}

// snapshot returns every hint so far.
func (h *hintLog) snapshot() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

// until waits for a hint naming queue and returns every hint so far.
func (h *hintLog) until(t *testing.T, queue string) []string {
	t.Helper()
	deadline := time.After(txWait)
	for {
		seen := h.snapshot()
		if slices.Contains(seen, queue) {
			return seen
		}
		select {
		case <-h.news:
		case <-deadline:
			t.Fatalf("no Wake-Up Hint for %q; heard %q", queue, seen)
		}
	}
}

// foreignTxs opens, for the environment named env, transactions its store
// cannot take: on another SQLite file, on PostgreSQL's "postgres" database,
// and of the other engine (the PostgreSQL ones only with
// BACKWAVE_TEST_POSTGRES_URL set).
func foreignTxs(t *testing.T, env string) map[string]backwave.Tx {
	t.Helper()
	ctx := t.Context()
	out := make(map[string]backwave.Tx)
	other := openSQLiteApp(t, filepath.Join(t.TempDir(), "other.db"))
	stx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stx.Rollback() })
	out["*sql.Tx on another SQLite file"] = stx
	pgURL := os.Getenv("BACKWAVE_TEST_POSTGRES_URL")
	if pgURL == "" {
		return out
	}
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/postgres"
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ptx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ptx.Rollback(context.Background()) })
	out["pgx.Tx on another PostgreSQL database"] = ptx
	if strings.HasPrefix(env, "sqlite") {
		conn, err := pgx.Connect(ctx, pgURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		ctx2, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out["pgx.Tx on PostgreSQL"] = ctx2
		db := openPgDB(t, pgURL)
		dtx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dtx.Rollback() })
		out["*sql.Tx on PostgreSQL"] = dtx
	}
	return out
}

// TestEnqueueUniqueTxSaysWhatItDid: inside the application's transaction an
// enqueue answers, per job, as EnqueueManyUnique does — stored, its key
// held, or its holder rewritten (Replace) — and the rewrite commits or rolls
// back with the transaction.
func TestEnqueueUniqueTxSaysWhatItDid(t *testing.T) {
	t.Parallel()
	eachTxEnv(t, func(t *testing.T, e *txEnv) {
		ctx := t.Context()
		c, _ := listenHints(t, e.store)
		replace := func(order int) backwave.EnqueueParams {
			return backwave.EnqueueParams{Args: shipOrder{Order: order}, Options: []backwave.EnqueueOption{
				backwave.WithUnique("ship:swap", backwave.UniqueWhileLive().Replace()), backwave.WithDelay(time.Hour)}}
		}
		held, err := c.EnqueueUnique(ctx, shipOrder{Order: 1}, backwave.WithUnique("ship:held", backwave.UniqueWhileLive()))
		if err != nil {
			t.Fatal(err)
		}
		holder, err := c.EnqueueUnique(ctx, replace(2).Args, replace(2).Options...)
		if err != nil {
			t.Fatal(err)
		}
		payload := func() string {
			j, err := e.store.JobGet(ctx, holder.ID)
			if err != nil {
				t.Fatal(err)
			}
			return string(j.Payload)
		}
		// Rolled back: the rewrite goes with it.
		tx := e.begin(t)
		res, err := c.EnqueueManyUniqueTx(ctx, tx.tx, []backwave.EnqueueParams{replace(3)})
		if err != nil {
			t.Fatalf("EnqueueManyUniqueTx: %v", err)
		}
		if res[0] != (backwave.EnqueueResult{ID: holder.ID, Replaced: true}) {
			t.Fatalf("a Replace of a Scheduled holder in a transaction = %+v, want holder %d replaced", res[0], holder.ID)
		}
		if err := tx.rollback(); err != nil {
			t.Fatal(err)
		}
		if got := payload(); got != `{"order":2}` {
			t.Fatalf("holder's payload %s after the transaction rolled back, want the one it had", got)
		}
		// Committed: one of each answer.
		tx = e.begin(t)
		res, err = c.EnqueueManyUniqueTx(ctx, tx.tx, []backwave.EnqueueParams{
			{Args: shipOrder{Order: 4}, Options: []backwave.EnqueueOption{backwave.WithUnique("ship:fresh", backwave.UniqueWhileLive())}},
			{Args: shipOrder{Order: 5}, Options: []backwave.EnqueueOption{backwave.WithUnique("ship:held", backwave.UniqueWhileLive())}},
			replace(6),
		})
		if err != nil {
			t.Fatalf("EnqueueManyUniqueTx: %v", err)
		}
		if err := tx.commit(); err != nil {
			t.Fatal(err)
		}
		switch {
		case !res[0].Inserted || res[0].Replaced || res[0].ID == held.ID || res[0].ID == holder.ID:
			t.Fatalf("a free key = %+v, want a new job inserted", res[0])
		case res[1] != (backwave.EnqueueResult{ID: held.ID}):
			t.Fatalf("a held key = %+v, want holder %d, not inserted", res[1], held.ID)
		case res[2] != (backwave.EnqueueResult{ID: holder.ID, Replaced: true}):
			t.Fatalf("a Replace = %+v, want holder %d replaced", res[2], holder.ID)
		}
		if got := payload(); got != `{"order":6}` {
			t.Fatalf("holder's payload %s after the commit, want the replacing job's", got)
		}
		one, err := c.EnqueueUniqueTx(ctx, e.begin(t).tx, shipOrder{Order: 7}, backwave.WithUnique("ship:held", backwave.UniqueWhileLive()))
		if err != nil || one != (backwave.EnqueueResult{ID: held.ID}) {
			t.Fatalf("EnqueueUniqueTx of a held key = %+v, %v; want holder %d, not inserted", one, err, held.ID)
		}
	})
}
