package backwave_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// twoNodes opens two stores over the same data, as two nodes would, each
// closed at cleanup (the second opener of the In-Memory Store is the store
// itself: it is in-process only). reopen opens a third over the same data,
// after the first two are gone.
type twoNodes struct {
	name string
	open func(t *testing.T, history store.HistoryPolicy) (a, b store.Store, reopen func() store.Store)
}

var observerStores = []twoNodes{
	{"memstore", func(t *testing.T, h store.HistoryPolicy) (store.Store, store.Store, func() store.Store) {
		s := memstore.New(memstore.Options{Clock: backwave.WallClock{}, History: h})
		return s, s, func() store.Store { return s }
	}},
	{"sqlite", func(t *testing.T, h store.HistoryPolicy) (store.Store, store.Store, func() store.Store) {
		path := filepath.Join(t.TempDir(), "jobs.db")
		open := func() store.Store {
			s, err := sqlite.Open(t.Context(), path, sqlite.Options{History: h})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		return open(), open(), open
	}},
	{"postgres", func(t *testing.T, h store.HistoryPolicy) (store.Store, store.Store, func() store.Store) {
		url := os.Getenv("BACKWAVE_TEST_POSTGRES_URL")
		if url == "" {
			t.Skip("BACKWAVE_TEST_POSTGRES_URL is not set")
		}
		schema := "bwobs_" + rand.Text()[:12]
		schema = strings.ToLower(schema)
		open := func(skip bool) store.Store {
			s, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema, History: h, SkipMigrate: skip})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		a := open(false)
		t.Cleanup(func() {
			conn, err := pgx.Connect(context.Background(), url)
			if err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
				return
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
			}
		})
		return a, open(true), func() store.Store { return open(true) }
	}},
}

// deliveries records what one node's callback was delivered.
type deliveries struct {
	mu   sync.Mutex
	seen map[int64]int // by Seq: how many times
	jobs map[backwave.JobID]bool
}

func newDeliveries() *deliveries {
	return &deliveries{seen: map[int64]int{}, jobs: map[backwave.JobID]bool{}}
}

func (d *deliveries) add(t backwave.ObservedTransition) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen[t.Seq]++
	d.jobs[t.JobID] = true
}

func (d *deliveries) has(ids []backwave.JobID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		if !d.jobs[id] {
			return false
		}
	}
	return true
}

func observerClient(t *testing.T, s store.Store, node string, o backwave.TransitionObserver) *backwave.Client {
	t.Helper()
	c, err := backwave.NewClient(s, backwave.Config{
		NodeID:              node,
		Logger:              slog.New(slog.DiscardHandler),
		DrainTimeout:        200 * time.Millisecond,
		TransitionObservers: []backwave.TransitionObserver{o},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// plainClient is an insert-only Client with no Transition Observer.
func plainClient(t *testing.T, s store.Store) *backwave.Client {
	t.Helper()
	c, err := backwave.NewClient(s, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Glossary, Transition Observer: "Driven by a Lease-claimed walk of the
// Transition Log, so it is delivered at-least-once (one node delivers each
// transition in the happy path; a crash mid-delivery redelivers)". Node A
// blocks in its third delivery and is abandoned without releasing the
// walk; node B takes the walk over once the Lease lapses and delivers
// everything, the blocked transition again included.
func TestTransitionObserverTakeoverAfterKill(t *testing.T) {
	t.Parallel()
	for _, st := range observerStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			sa, sb, _ := st.open(t, store.HistoryTransitionsWithDetail)
			const n = 12
			enq := plainClient(t, sa)
			ids := make([]backwave.JobID, n)
			for i := range ids {
				id, err := enq.Enqueue(ctx, greet{Name: "x"})
				if err != nil {
					t.Fatal(err)
				}
				ids[i] = id
			}
			a, b := newDeliveries(), newDeliveries()
			blocked, release := make(chan backwave.ObservedTransition, 1), make(chan struct{})
			defer close(release)
			var calls int
			base := backwave.TransitionObserver{
				Name: "chat", States: []backwave.JobState{backwave.StateScheduled},
				Interval: 50 * time.Millisecond, LeaseDuration: time.Second,
			}
			oa := base
			oa.Observe = func(ctx context.Context, tr backwave.ObservedTransition) error {
				if calls++; calls == 3 {
					blocked <- tr
					<-release // killed: never returns while the test runs
				}
				a.add(tr)
				return nil
			}
			ca := observerClient(t, sa, "node-a", oa)
			if err := ca.Start(ctx); err != nil {
				t.Fatal(err)
			}
			var stuck backwave.ObservedTransition
			select {
			case stuck = <-blocked:
			case <-time.After(30 * time.Second):
				t.Fatal("node A never reached its third delivery")
			}
			// A's drain runs out with the delivery still blocked: it exits
			// without releasing the walk.
			if err := ca.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			ob := base
			ob.Observe = func(ctx context.Context, tr backwave.ObservedTransition) error { b.add(tr); return nil }
			cb := observerClient(t, sb, "node-b", ob)
			if err := cb.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cb.Stop(context.Background()) }()
			waitFor(t, "node B to deliver every transition A did not", func() bool {
				a.mu.Lock()
				defer a.mu.Unlock()
				b.mu.Lock()
				defer b.mu.Unlock()
				for _, id := range ids {
					if !a.jobs[id] && !b.jobs[id] {
						return false
					}
				}
				return b.seen[stuck.Seq] > 0
			})
			a.mu.Lock()
			delivered := len(a.seen)
			a.mu.Unlock()
			if delivered != 2 {
				t.Fatalf("node A completed %d deliveries before it was killed, want 2", delivered)
			}
			if !b.has([]backwave.JobID{stuck.JobID}) {
				t.Fatalf("the transition A was killed delivering (job %d) was not delivered again", stuck.JobID)
			}
		})
	}
}

// A clean stop moves the cursor past what was delivered: the durable cursor
// survives the store being reopened, and a restarted node delivers only
// what is new.
func TestTransitionObserverCursorDurable(t *testing.T) {
	t.Parallel()
	for _, st := range observerStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			sa, _, reopen := st.open(t, store.HistoryTransitions)
			enq := plainClient(t, sa)
			first, err := enq.Enqueue(ctx, greet{Name: "first"})
			if err != nil {
				t.Fatal(err)
			}
			o := backwave.TransitionObserver{Name: "audit", States: []backwave.JobState{backwave.StateScheduled}, Interval: 50 * time.Millisecond}
			d1 := newDeliveries()
			o.Observe = func(_ context.Context, tr backwave.ObservedTransition) error { d1.add(tr); return nil }
			c1 := observerClient(t, sa, "node-1", o)
			if err := c1.Start(ctx); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the first delivery", func() bool { return d1.has([]backwave.JobID{first}) })
			if err := c1.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			s2 := reopen()
			second, err := plainClient(t, s2).Enqueue(ctx, greet{Name: "second"})
			if err != nil {
				t.Fatal(err)
			}
			d2 := newDeliveries()
			o.Observe = func(_ context.Context, tr backwave.ObservedTransition) error { d2.add(tr); return nil }
			c2 := observerClient(t, s2, "node-2", o)
			if err := c2.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c2.Stop(context.Background()) }()
			waitFor(t, "the second delivery", func() bool { return d2.has([]backwave.JobID{second}) })
			if d2.has([]backwave.JobID{first}) {
				t.Fatalf("after a clean stop and a reopen, job %d was delivered again", first)
			}
		})
	}
}

// Glossary, Transition Observer: "Requires Job History Policy ≥
// Transitions (no log, nothing to observe)". NewClient refuses, clearly.
func TestTransitionObserverRefusesHistoryOff(t *testing.T) {
	t.Parallel()
	for _, st := range observerStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			s, _, _ := st.open(t, store.HistoryOff)
			_, err := backwave.NewClient(s, backwave.Config{
				Logger: slog.New(slog.DiscardHandler),
				TransitionObservers: []backwave.TransitionObserver{{
					Name: "chat", States: []backwave.JobState{backwave.StateDeadLettered},
					Observe: func(context.Context, backwave.ObservedTransition) error { return nil },
				}},
			})
			if !errors.Is(err, backwave.ErrInvalidConfig) || !strings.Contains(err.Error(), `"off"`) || !strings.Contains(err.Error(), "history=transitions") {
				t.Fatalf("NewClient over history=off: %v, want ErrInvalidConfig naming the policy and the fix", err)
			}
		})
	}
}

// Configuration errors name the knob.
func TestTransitionObserverConfigErrors(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, backwave.ObservedTransition) error { return nil }
	for _, tc := range []struct {
		name string
		obs  []backwave.TransitionObserver
		want string
	}{
		{"no name", []backwave.TransitionObserver{{States: []backwave.JobState{backwave.StateSucceeded}, Observe: ok}}, "no Name"},
		{"no func", []backwave.TransitionObserver{{Name: "x", States: []backwave.JobState{backwave.StateSucceeded}}}, "no Observe"},
		{"no states", []backwave.TransitionObserver{{Name: "x", Observe: ok}}, "declares no state"},
		{"duplicate", []backwave.TransitionObserver{
			{Name: "x", States: []backwave.JobState{backwave.StateSucceeded}, Observe: ok},
			{Name: "x", States: []backwave.JobState{backwave.StateSucceeded}, Observe: ok},
		}, "two Transition Observers"},
		{"negative", []backwave.TransitionObserver{{Name: "x", States: []backwave.JobState{backwave.StateSucceeded}, Observe: ok, Interval: -1}}, `observer "x": Interval -1ns (want > 0)`},
		{"negative lease", []backwave.TransitionObserver{{Name: "x", States: []backwave.JobState{backwave.StateSucceeded}, Observe: ok, LeaseDuration: -1}}, `observer "x": LeaseDuration -1ns (want > 0)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := backwave.NewClient(newStore(), backwave.Config{Logger: slog.New(slog.DiscardHandler), TransitionObservers: tc.obs})
			if !errors.Is(err, backwave.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewClient: %v, want ErrInvalidConfig mentioning %q", err, tc.want)
			}
		})
	}
}

// Admin.RemoveTransitionObserver forgets a registration; an unknown name is
// ErrNotFound.
func TestRemoveTransitionObserver(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore()
	id, err := plainClient(t, s).Enqueue(ctx, greet{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	d := newDeliveries()
	c := observerClient(t, s, "n", backwave.TransitionObserver{
		Name: "audit", States: []backwave.JobState{backwave.StateScheduled}, Interval: 20 * time.Millisecond,
		Observe: func(_ context.Context, tr backwave.ObservedTransition) error { d.add(tr); return nil },
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery", func() bool { return d.has([]backwave.JobID{id}) })
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	admin, err := backwave.NewAdmin(s, "test:operator")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.RemoveTransitionObserver(ctx, "audit"); err != nil {
		t.Fatal(err)
	}
	if err := admin.RemoveTransitionObserver(ctx, "audit"); !errors.Is(err, backwave.ErrNotFound) {
		t.Fatalf("removing it again: %v, want ErrNotFound", err)
	}
}

type declined struct{ Card string }

func (declined) WireName() string { return "test.declined" }

// TransitionObserver.FailureDetail: an observer that asks for it is
// delivered the Failure Detail of a dead-letter; one that does not ask is
// delivered none (Failure Detail is a sensitive read).
func TestTransitionObserverFailureDetail(t *testing.T) {
	t.Parallel()
	for _, st := range observerStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s, _, _ := st.open(t, store.HistoryTransitionsWithDetail)
			h := backwave.NewHandlers()
			if err := backwave.AddHandlerFunc(h, func(_ context.Context, j *backwave.Job[declined]) error {
				return errors.New("card " + j.Args.Card + " declined\nsecond line")
			}); err != nil {
				t.Fatal(err)
			}
			type got struct{ detail, plain chan string }
			g := got{make(chan string, 1), make(chan string, 1)}
			observer := func(name string, detail bool, into chan string) backwave.TransitionObserver {
				return backwave.TransitionObserver{
					Name: name, States: []backwave.JobState{backwave.StateDeadLettered}, Interval: 20 * time.Millisecond,
					FailureDetail: detail,
					Observe: func(_ context.Context, tr backwave.ObservedTransition) error {
						select {
						case into <- tr.FailureDetail:
						default:
						}
						return nil
					},
				}
			}
			c, err := backwave.NewClient(s, backwave.Config{
				Handlers: h,
				Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("g", backwave.Strict(backwave.DefaultQueue))},
				Logger:   slog.New(slog.DiscardHandler),
				TransitionObservers: []backwave.TransitionObserver{
					observer("with-detail", true, g.detail), observer("without", false, g.plain),
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Stop(context.WithoutCancel(ctx)) }()
			if _, err := c.Enqueue(ctx, declined{Card: "4111"}, backwave.WithMaxAttempts(1)); err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct {
				name string
				ch   chan string
				want func(string) bool
			}{
				{"with-detail", g.detail, func(d string) bool { return strings.Contains(d, "card 4111 declined") }},
				{"without", g.plain, func(d string) bool { return d == "" }},
			} {
				select {
				case d := <-w.ch:
					if !w.want(d) {
						t.Errorf("observer %s was delivered Failure Detail %q", w.name, d)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("observer %s was not delivered the dead-letter", w.name)
				}
			}
		})
	}
}

// TransitionObserver.StartFromNow: a new notifier is not delivered the
// dead-letters retained from before its first walk, only the ones after.
func TestTransitionObserverStartFromNow(t *testing.T) {
	t.Parallel()
	for _, st := range observerStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s, _, _ := st.open(t, store.HistoryTransitionsWithDetail)
			h := backwave.NewHandlers()
			if err := backwave.AddHandlerFunc(h, func(_ context.Context, j *backwave.Job[declined]) error {
				return errors.New("declined")
			}); err != nil {
				t.Fatal(err)
			}
			newClient := func(observers ...backwave.TransitionObserver) *backwave.Client {
				c, err := backwave.NewClient(s, backwave.Config{
					Handlers:            h,
					Groups:              []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("g", backwave.Strict(backwave.DefaultQueue))},
					Logger:              slog.New(slog.DiscardHandler),
					TransitionObservers: observers,
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Start(ctx); err != nil {
					t.Fatal(err)
				}
				return c
			}
			deadLetter := func(c *backwave.Client, card string) backwave.JobID {
				id, err := c.Enqueue(ctx, declined{Card: card}, backwave.WithMaxAttempts(1))
				if err != nil {
					t.Fatal(err)
				}
				for {
					j, err := s.JobGet(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if j.State == job.StateDeadLettered {
						return id
					}
					select {
					case <-ctx.Done():
						t.Fatalf("job %d did not dead-letter", id)
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
			before := newClient()
			old := deadLetter(before, "old")
			if err := before.Stop(ctx); err != nil {
				t.Fatal(err)
			}

			delivered := make(chan backwave.JobID, 4)
			c := newClient(backwave.TransitionObserver{
				Name: "notifier", States: []backwave.JobState{backwave.StateDeadLettered}, Interval: 20 * time.Millisecond,
				StartFromNow: true,
				Observe: func(_ context.Context, tr backwave.ObservedTransition) error {
					delivered <- tr.JobID
					return nil
				},
			})
			defer func() { _ = c.Stop(context.WithoutCancel(ctx)) }()
			// Dead-letter recent jobs until one is delivered: those written
			// before the first walk registered the name are skipped too,
			// but the old one must never arrive.
			var recent []backwave.JobID
			for len(recent) < 50 {
				recent = append(recent, deadLetter(c, "recent"))
				select {
				case id := <-delivered:
					if !slices.Contains(recent, id) {
						t.Fatalf("the notifier started from now was delivered job %d (old %d, recent %v)", id, old, recent)
					}
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
			t.Fatalf("the notifier was delivered none of the recent dead-letters %v", recent)
		})
	}
}
