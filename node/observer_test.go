package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// walkNode is one node's Walker driven synchronously against a memstore,
// as the Shell's walk pump drives it: store commands through the Caller,
// each Deliver answered by the test.
type walkNode struct {
	t       *testing.T
	w       *node.Walker
	cl      node.Caller
	clock   *vtime.Manual
	pending []node.Deliver
}

func newWalkNode(t *testing.T, s *memstore.Store, clock *vtime.Manual, holder job.WorkerID, cfg node.WalkerConfig) *walkNode {
	t.Helper()
	w, err := node.NewWalker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &walkNode{t: t, w: w, cl: node.Caller{Worker: holder, Observers: s}, clock: clock}
}

func (n *walkNode) step(ev node.Event) {
	cmds := n.w.Step(ev, nil)
	for i := 0; i < len(cmds); i++ {
		switch c := cmds[i].(type) {
		case node.StoreCommand:
			cmds = n.w.Step(n.cl.Call(context.Background(), c).Event(n.clock.Now()), cmds)
		case node.Deliver:
			n.pending = append(n.pending, c)
		default:
			n.t.Fatalf("unexpected command %s", c)
		}
	}
}

// answer answers the one outstanding Deliver.
func (n *walkNode) answer(failed bool) store.ObservedTransition {
	n.t.Helper()
	if len(n.pending) != 1 {
		n.t.Fatalf("%d deliveries outstanding, want 1", len(n.pending))
	}
	d := n.pending[0]
	n.pending = n.pending[:0]
	n.step(node.Delivered{Now: n.clock.Now(), Position: d.Transition.Position, Failed: failed})
	return d.Transition
}

func insertN(t *testing.T, s *memstore.Store, n int) {
	t.Helper()
	jobs := make([]store.NewJob, n)
	for i := range jobs {
		jobs[i] = store.NewJob{WireName: "w", Queue: "q", MaxAttempts: 1}
	}
	if _, err := s.JobInsertMany(context.Background(), store.InsertManyParams{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
}

var walkCfg = node.WalkerConfig{
	Observer: "chat", States: []job.State{job.StateScheduled},
	LeaseDuration: 3 * time.Second, Interval: time.Second, MaxBackoff: 4 * time.Second, Limit: 10,
}

// Glossary, Transition Observer: "a crash mid-delivery redelivers". Node 1
// is killed (never answered, never stopped) in its second delivery; node 2
// is refused the walk until the Lease lapses, then delivers from the
// durable cursor: the entry node 1 was delivering, again, and the rest.
func TestWalkerTakeoverRedelivers(t *testing.T) {
	t.Parallel()
	clock := vtime.NewManual(vtime.Epoch)
	s := memstore.New(memstore.Options{Clock: clock})
	insertN(t, s, 3)
	n1 := newWalkNode(t, s, clock, "n1", walkCfg)
	n2 := newWalkNode(t, s, clock, "n2", walkCfg)
	n1.step(node.WalkTick{Now: clock.Now()})
	first := n1.answer(false)
	if len(n1.pending) != 1 {
		t.Fatal("no second delivery after the first")
	}
	killed := n1.pending[0].Transition // n1 dies in it
	n2.step(node.WalkTick{Now: clock.Now()})
	if len(n2.pending) != 0 {
		t.Fatal("node 2 delivered while node 1 held the walk")
	}
	clock.Advance(walkCfg.LeaseDuration + time.Second)
	n2.step(node.WalkTick{Now: clock.Now()})
	var got []store.ObservedTransition
	for len(n2.pending) > 0 {
		got = append(got, n2.answer(false))
	}
	if len(got) != 3 || got[0].Position != first.Position || got[1].Position != killed.Position {
		t.Fatalf("node 2 delivered %v, want all three from the durable cursor (node 1 advanced nothing)", got)
	}
}

// A failed delivery moves the cursor to what was delivered, waits the
// backoff, and delivers the failed entry again; the walk never skips it.
func TestWalkerFailedDeliveryBacksOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		failures int
		wait     time.Duration // the backoff before the last retry
	}{
		{"once", 1, time.Second},
		{"twice", 2, 2 * time.Second},
		{"capped", 4, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := vtime.NewManual(vtime.Epoch)
			s := memstore.New(memstore.Options{Clock: clock})
			insertN(t, s, 2)
			n := newWalkNode(t, s, clock, "n1", walkCfg)
			n.step(node.WalkTick{Now: clock.Now()})
			n.answer(false)
			var failed store.ObservedTransition
			var wait time.Duration
			for i := range tc.failures {
				failed = n.answer(true)
				wait = time.Second << i
				wait = min(wait, walkCfg.MaxBackoff)
				clock.Advance(wait - time.Millisecond)
				n.step(node.WalkTick{Now: clock.Now()})
				if len(n.pending) != 0 {
					t.Fatalf("failure %d: redelivered before its backoff %v", i+1, wait)
				}
				clock.Advance(time.Millisecond)
				n.step(node.WalkTick{Now: clock.Now()})
				if len(n.pending) != 1 || n.pending[0].Transition.Position != failed.Position {
					t.Fatalf("failure %d: after the backoff %v got %v, want the failed entry again", i+1, wait, n.pending)
				}
			}
			if wait != tc.wait {
				t.Fatalf("last backoff %v, want %v", wait, tc.wait)
			}
			if again := n.answer(false); again.Position != failed.Position {
				t.Fatalf("delivered %v, want %v", again.Position, failed.Position)
			}
		})
	}
}

// A clean stop waits for the delivery in flight, moves the cursor past it
// and releases the walk, so another node takes it over at once.
func TestWalkerStopReleases(t *testing.T) {
	t.Parallel()
	clock := vtime.NewManual(vtime.Epoch)
	s := memstore.New(memstore.Options{Clock: clock})
	insertN(t, s, 2)
	n1 := newWalkNode(t, s, clock, "n1", walkCfg)
	n1.step(node.WalkTick{Now: clock.Now()})
	n1.step(node.Stop{Now: clock.Now()})
	if n1.w.Stopped() {
		t.Fatal("stopped with a delivery in flight")
	}
	done := n1.answer(false)
	if !n1.w.Stopped() {
		t.Fatal("not stopped after the delivery in flight returned")
	}
	n2 := newWalkNode(t, s, clock, "n2", walkCfg)
	n2.step(node.WalkTick{Now: clock.Now()})
	if len(n2.pending) != 1 || !done.Position.Before(n2.pending[0].Transition.Position) {
		t.Fatalf("node 2 got %v at once, want the entry after %s", n2.pending, done.Position)
	}
}

// While a slow delivery runs, ticks renew the walk's Lease, so no other
// node takes it over.
func TestWalkerRenewsWhileDelivering(t *testing.T) {
	t.Parallel()
	clock := vtime.NewManual(vtime.Epoch)
	s := memstore.New(memstore.Options{Clock: clock})
	insertN(t, s, 1)
	n1 := newWalkNode(t, s, clock, "n1", walkCfg)
	n2 := newWalkNode(t, s, clock, "n2", walkCfg)
	n1.step(node.WalkTick{Now: clock.Now()})
	for range 10 { // ten seconds, over three Leases
		clock.Advance(time.Second)
		n1.step(node.WalkTick{Now: clock.Now()})
		n2.step(node.WalkTick{Now: clock.Now()})
		if len(n2.pending) != 0 {
			t.Fatal("node 2 took the walk over from a node renewing it")
		}
	}
	n1.answer(false)
}

// TestWalkerConfigErrors: every knob a Walker cannot run with is an error
// wrapping ErrInvalidConfig — the one sentinel of every machine's
// configuration — naming the knob; zero values take the defaults table's.
func TestWalkerConfigErrors(t *testing.T) {
	t.Parallel()
	ok := []job.State{job.StateSucceeded}
	for _, tc := range []struct {
		name string
		cfg  node.WalkerConfig
		want string
	}{
		{"no name", node.WalkerConfig{States: ok}, "observer"},
		{"no states", node.WalkerConfig{Observer: "x"}, "state"},
		{"backoff below interval", node.WalkerConfig{Observer: "x", States: ok, Interval: time.Second, MaxBackoff: time.Millisecond}, "MaxBackoff"},
		{"default backoff below interval", node.WalkerConfig{Observer: "x", States: ok, Interval: 2 * node.DefaultWalkMaxBackoff}, "MaxBackoff"},
		{"negative lease", node.WalkerConfig{Observer: "x", States: ok, LeaseDuration: -time.Second}, "LeaseDuration"},
		{"negative interval", node.WalkerConfig{Observer: "x", States: ok, Interval: -time.Second}, "Interval"},
		{"negative limit", node.WalkerConfig{Observer: "x", States: ok, Limit: -1}, "Limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := node.NewWalker(tc.cfg)
			if !errors.Is(err, node.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewWalker(%+v) = %v, want an error wrapping ErrInvalidConfig naming %s", tc.cfg, err, tc.want)
			}
		})
	}
	w, err := node.NewWalker(node.WalkerConfig{Observer: "x", States: ok})
	if err != nil {
		t.Fatal(err)
	}
	want := node.WalkerConfig{Observer: "x", States: ok, LeaseDuration: node.DefaultWalkLeaseDuration, Interval: node.DefaultWalkInterval,
		MaxBackoff: node.DefaultWalkMaxBackoff, Limit: node.DefaultWalkLimit}
	if got := w.Config(); got.LeaseDuration != want.LeaseDuration || got.Interval != want.Interval || got.MaxBackoff != want.MaxBackoff || got.Limit != want.Limit {
		t.Fatalf("defaults: %+v, want %+v", got, want)
	}
}
