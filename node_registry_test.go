package backwave_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
	"github.com/backwave/backwave/vtime"
)

// flakyNodes is a store whose node registry stamps fail while failing is
// set, counting every stamp tried.
type flakyNodes struct {
	store.Store
	failing atomic.Bool
	stamps  atomic.Int64
}

var errStampDown = errors.New("node stamps are down")

func (f *flakyNodes) NodeStamp(ctx context.Context, p store.NodeStampParams) (time.Time, error) {
	f.stamps.Add(1)
	if f.failing.Load() {
		return time.Time{}, errStampDown
	}
	return f.Store.NodeStamp(ctx, p)
}

// nodeByID returns the row of id in v.
func nodeByID(t *testing.T, v backwave.NodesView, id string) backwave.NodeInfo {
	t.Helper()
	for _, n := range v.Nodes {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("node %s is not listed; the registry holds %+v", id, v.Nodes)
	return backwave.NodeInfo{}
}

// liveNodes renders NodesView.Queues as "queue=n" pairs.
func liveNodes(v backwave.NodesView) string {
	var out []string
	for _, q := range v.Queues {
		out = append(out, q.Queue+"="+strconv.Itoa(q.LiveNodes))
	}
	return strings.Join(out, " ")
}

// Two Clients on one SQLite file, as two processes on one host would run:
// both listed while running with what they serve; one whose stamps fail is
// shown expired once its last heartbeat is NodeLiveBeats beats old on the
// store's clock; each row goes at Stop.
func TestNodeRegistryTwoClientsOneFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := vtime.NewManual(vtime.Epoch)
	path := filepath.Join(t.TempDir(), "jobs.db")
	open := func() store.Store {
		s, err := sqlite.Open(ctx, path, sqlite.Options{Clock: clock})
		must(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	stA := open()
	stB := &flakyNodes{Store: open()}
	h := backwave.NewHandlers()
	must(t, backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[greet]) error { return nil }))
	// A beats hourly, so it stays live through the test with no stamp
	// more; B beats every second, so it expires 3 s after its last stamp.
	a := startClient(t, stA, backwave.Config{Handlers: h, NodeID: "node-a", NodeHeartbeat: time.Hour,
		Groups: []backwave.WorkerGroupOptions{group("ga", "alpha", "shared")}})
	b, err := backwave.NewClient(stB, backwave.Config{Handlers: h, NodeID: "node-b", NodeHeartbeat: time.Second,
		Groups: []backwave.WorkerGroupOptions{group("gb", "beta"), group("gb2", "shared")}, Logger: testLogger(t, slog.LevelError)})
	must(t, err)
	must(t, b.Start(ctx))
	admin, err := backwave.NewAdmin(stA, "test")
	must(t, err)

	v, err := admin.Nodes(ctx)
	must(t, err)
	if len(v.Nodes) != 2 {
		t.Fatalf("registry while both run: %+v, want two rows", v.Nodes)
	}
	host, _ := os.Hostname()
	na, nb := nodeByID(t, v, a.NodeRegistryID()), nodeByID(t, v, b.NodeRegistryID())
	switch {
	case !strings.HasPrefix(na.ID, "node-a.") || !strings.HasPrefix(nb.ID, "node-b."):
		t.Fatalf("node ids %q and %q, want Config.NodeID and a suffix", na.ID, nb.ID)
	case !na.Live || !nb.Live:
		t.Fatalf("both just started, live = %v and %v", na.Live, nb.Live)
	case na.Host != host || na.PID != os.Getpid() || na.Version != backwave.Version:
		t.Fatalf("node a listed as host %q pid %d version %q, want %q %d %q", na.Host, na.PID, na.Version, host, os.Getpid(), backwave.Version)
	case na.Beat != time.Hour || nb.Beat != time.Second:
		t.Fatalf("beats %v and %v, want 1h and 1s", na.Beat, nb.Beat)
	case !na.StartedAt.Equal(vtime.Epoch) || !na.HeartbeatAt.Equal(vtime.Epoch):
		t.Fatalf("node a started %v, heartbeat %v, want the store clock's %v", na.StartedAt, na.HeartbeatAt, vtime.Epoch)
	}
	if got, want := nb.Groups, []backwave.NodeGroup{{Name: "gb", Queues: []string{"beta"}}, {Name: "gb2", Queues: []string{"shared"}}}; !slices.EqualFunc(got, want, func(x, y backwave.NodeGroup) bool {
		return x.Name == y.Name && slices.Equal(x.Queues, y.Queues)
	}) {
		t.Fatalf("node b's groups %+v, want %+v", got, want)
	}
	if got := liveNodes(v); got != "alpha=1 beta=1 shared=2" {
		t.Fatalf("live nodes per Queue %q, want alpha=1 beta=1 shared=2", got)
	}

	// B can no longer stamp. At NodeLiveBeats beats on the store's clock
	// it is still live; a moment later it is expired, and beta has no
	// live node.
	stB.failing.Store(true)
	clock.Advance(backwave.NodeLiveBeats * time.Second)
	v, err = admin.Nodes(ctx)
	must(t, err)
	if !nodeByID(t, v, b.NodeRegistryID()).Live {
		t.Fatalf("node b is expired %v after its last stamp, within %d beats", v.Now.Sub(vtime.Epoch), backwave.NodeLiveBeats)
	}
	clock.Advance(time.Millisecond)
	v, err = admin.Nodes(ctx)
	must(t, err)
	if nodeByID(t, v, b.NodeRegistryID()).Live || !nodeByID(t, v, a.NodeRegistryID()).Live {
		t.Fatalf("past b's bound on the store clock: %+v, want a live and b expired", v.Nodes)
	}
	if got := liveNodes(v); got != "alpha=1 beta=0 shared=1" || v.Served("beta") || !v.Served("shared") {
		t.Fatalf("live nodes per Queue %q (beta served %v), want alpha=1 beta=0 shared=1", got, v.Served("beta"))
	}

	// Each Stop removes its own row.
	must(t, b.Stop(ctx))
	v, err = admin.Nodes(ctx)
	must(t, err)
	if len(v.Nodes) != 1 || v.Nodes[0].ID != a.NodeRegistryID() {
		t.Fatalf("after b stopped the registry holds %+v, want only a", v.Nodes)
	}
	must(t, a.Stop(ctx))
	v, err = admin.Nodes(ctx)
	must(t, err)
	if len(v.Nodes) != 0 {
		t.Fatalf("after both stopped the registry holds %+v, want none", v.Nodes)
	}
}

// A failing stamp is logged once per streak and never stops the Client;
// cancelling the Start context stops the stamps, and Stop still removes
// the row.
func TestNodeRegistryStampFailures(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &flakyNodes{Store: newStore()}
		logs := &syncBuffer{}
		c, err := backwave.NewClient(st, backwave.Config{NodeHeartbeat: time.Second,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		must(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		st.failing.Store(true)
		must(t, c.Start(ctx))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := st.stamps.Load(); n < 10 {
			t.Fatalf("%d stamps tried in 10 beats, want at least 10", n)
		}
		if n := strings.Count(logs.String(), "stamp failed"); n != 1 {
			t.Fatalf("10 failed stamps logged %d times, want once:\n%s", n, logs.String())
		}
		st.failing.Store(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		st.failing.Store(true)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if f, ok := strings.Count(logs.String(), "stamp failed"), strings.Count(logs.String(), "stamp succeeded again"); f != 2 || ok != 1 {
			t.Fatalf("two failure streaks around one success logged %d failures and %d recoveries, want 2 and 1:\n%s", f, ok, logs.String())
		}
		st.failing.Store(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()

		cancel()
		synctest.Wait()
		before := st.stamps.Load()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := st.stamps.Load(); n != before {
			t.Fatalf("%d stamps after the Start context was cancelled, want none", n-before)
		}
		v, err := st.NodeList(context.Background())
		must(t, err)
		if len(v.Nodes) != 1 || v.Nodes[0].Live(v.Now) {
			t.Fatalf("after the stamps stopped, the registry holds %+v at %v, want the row, expired", v.Nodes, v.Now)
		}
		must(t, c.Stop(context.Background()))
		if v, err := st.NodeList(context.Background()); err != nil || len(v.Nodes) != 0 {
			t.Fatalf("after Stop the registry holds %+v (%v), want none", v.Nodes, err)
		}
	})
}

// The beat's default follows the Worker Groups' heartbeat; a negative
// NodeHeartbeat is refused.
func TestNodeHeartbeatDefault(t *testing.T) {
	t.Parallel()
	h := backwave.NewHandlers()
	must(t, backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[greet]) error { return nil }))
	short := group("short", "q") // HeartbeatInterval 10 s
	leased := backwave.DefaultWorkerGroup("leased", backwave.Strict("r"))
	leased.LeaseDuration = 12 * time.Second
	for _, tc := range []struct {
		name string
		cfg  backwave.Config
		want time.Duration
	}{
		{"no groups", backwave.Config{}, backwave.DefaultLeaseDuration / 3},
		{"default group", backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("d", backwave.Strict("q"))}}, backwave.DefaultLeaseDuration / 3},
		{"shortest group", backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{short, leased}}, 4 * time.Second},
		{"set", backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{short}, NodeHeartbeat: time.Minute}, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newStore()
			c := startClient(t, st, tc.cfg)
			v, err := st.NodeList(context.Background())
			must(t, err)
			if len(v.Nodes) != 1 || v.Nodes[0].ID != c.NodeRegistryID() || v.Nodes[0].Beat != tc.want {
				t.Fatalf("registry %+v, want one row for %s with beat %v", v.Nodes, c.NodeRegistryID(), tc.want)
			}
		})
	}
	if _, err := backwave.NewClient(newStore(), backwave.Config{NodeHeartbeat: -time.Second}); !errors.Is(err, backwave.ErrInvalidConfig) {
		t.Fatalf("NewClient with a negative NodeHeartbeat = %v, want ErrInvalidConfig", err)
	}
}

// A node's row carries the jobs it holds at each stamp.
func TestNodeRegistryRunningCount(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := newStore()
		started, release := make(chan struct{}), make(chan struct{})
		h := backwave.NewHandlers()
		must(t, backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[greet]) error {
			close(started)
			<-release
			return nil
		}))
		c := startClient(t, st, backwave.Config{Handlers: h, NodeHeartbeat: time.Second,
			Groups: []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)}})
		running := func() int {
			t.Helper()
			v, err := st.NodeList(ctx)
			must(t, err)
			if len(v.Nodes) != 1 || v.Nodes[0].ID != c.NodeRegistryID() {
				t.Fatalf("registry %+v, want the one node %s", v.Nodes, c.NodeRegistryID())
			}
			return v.Nodes[0].Running
		}
		if _, err := c.Enqueue(ctx, greet{Name: "ada"}); err != nil {
			t.Fatal(err)
		}
		<-started
		time.Sleep(time.Second)
		synctest.Wait()
		if n := running(); n != 1 {
			t.Fatalf("running %d while the handler holds its job, want 1", n)
		}
		close(release)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := running(); n != 0 {
			t.Fatalf("running %d after the job finished, want 0", n)
		}
	})
}
