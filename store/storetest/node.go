package storetest

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
)

// nodeParams is a valid stamp of node id: one Worker Group serving two
// Queues, a 10 s beat, a one-hour forget horizon.
func nodeParams(id string) store.NodeStampParams {
	return store.NodeStampParams{
		ID: id, Host: "host-" + id, PID: 4242, Version: "0.1.0",
		Groups:  []store.NodeGroup{{Name: "default", Queues: []string{"q", "r"}}},
		Running: 2, Beat: 10 * time.Second, Forget: time.Hour,
	}
}

// nodeStamp stamps p and checks the answered now lies within the call.
func (e *env) nodeStamp(p store.NodeStampParams) time.Time {
	e.t.Helper()
	before := e.now()
	now, err := e.s.NodeStamp(e.ctx, p)
	if err != nil {
		e.t.Fatalf("NodeStamp(%s): %v", p.ID, err)
	}
	if after := e.now(); now.Before(before.Truncate(time.Microsecond)) || now.After(after) {
		e.t.Fatalf("NodeStamp answered now %v, outside the call's [%v, %v]", now, before, after)
	}
	return now
}

// nodeList lists the registry and checks no heartbeat is after its now.
func (e *env) nodeList() store.NodeView {
	e.t.Helper()
	v, err := e.s.NodeList(e.ctx)
	if err != nil {
		e.t.Fatalf("NodeList: %v", err)
	}
	for _, r := range v.Nodes {
		if r.HeartbeatAt.After(v.Now) || r.StartedAt.After(r.HeartbeatAt) {
			e.t.Fatalf("node %s started %v, heartbeat %v, listed at now %v: want started ≤ heartbeat ≤ now", r.ID, r.StartedAt, r.HeartbeatAt, v.Now)
		}
	}
	return v
}

// nodeIDs renders a view's node ids, in order.
func nodeIDs(v store.NodeView) string {
	ids := make([]string, len(v.Nodes))
	for i, r := range v.Nodes {
		ids[i] = r.ID
	}
	return strings.Join(ids, ",")
}

// sameMicro reports whether a and b are the same instant to the
// microsecond, the SQL adapters' precision.
func sameMicro(a, b time.Time) bool {
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}

func testNodes(t *testing.T, s *suite) {
	// Nodes.NodeStamp: "writes p.ID's row with p's fields and a heartbeat
	// of the store's now (a first stamp also sets the row's StartedAt to
	// that now)"; NodeList: "every row, ordered by ID".
	s.run(t, "StampAndList", func(t *testing.T, e *env) {
		p := nodeParams("node-b")
		now := e.nodeStamp(p)
		e.nodeStamp(store.NodeStampParams{ID: "node-a", Beat: time.Second, Forget: time.Hour})
		v := e.nodeList()
		if got := nodeIDs(v); got != "node-a,node-b" {
			t.Fatalf("NodeList ids %q, want node-a,node-b", got)
		}
		r := v.Nodes[1]
		if !sameMicro(r.StartedAt, now) || !sameMicro(r.HeartbeatAt, now) {
			t.Fatalf("node-b started %v, heartbeat %v, want both the stamp's now %v", r.StartedAt, r.HeartbeatAt, now)
		}
		want := store.NodeRecord{ID: p.ID, Host: p.Host, PID: p.PID, Version: p.Version, Groups: p.Groups, Running: p.Running, Beat: p.Beat,
			StartedAt: r.StartedAt, HeartbeatAt: r.HeartbeatAt}
		if !reflect.DeepEqual(r, want) {
			t.Fatalf("node-b listed as %+v, want %+v", r, want)
		}
		if a := v.Nodes[0]; a.Groups != nil || a.Host != "" || a.PID != 0 || a.Running != 0 {
			t.Fatalf("node-a, stamped with no groups, host, pid or running count, listed as %+v", a)
		}
	})

	// "a later one keeps it [StartedAt]" and replaces every other field.
	s.run(t, "Restamp", func(t *testing.T, e *env) {
		e.needAdvance()
		first := e.nodeStamp(nodeParams("n"))
		e.advance(5 * time.Second)
		p := nodeParams("n")
		p.Running, p.Version, p.Groups = 0, "0.2.0", []store.NodeGroup{{Name: "other", Queues: []string{"z"}}, {Name: "default", Queues: []string{"q"}}}
		second := e.nodeStamp(p)
		v := e.nodeList()
		if len(v.Nodes) != 1 {
			t.Fatalf("a restamp left %d rows (%s), want one", len(v.Nodes), nodeIDs(v))
		}
		r := v.Nodes[0]
		switch {
		case !sameMicro(r.StartedAt, first):
			t.Fatalf("restamped node started at %v, want the first stamp's %v", r.StartedAt, first)
		case !sameMicro(r.HeartbeatAt, second):
			t.Fatalf("restamped node's heartbeat %v, want the second stamp's %v", r.HeartbeatAt, second)
		case r.Running != 0 || r.Version != "0.2.0" || !reflect.DeepEqual(r.Groups, p.Groups):
			t.Fatalf("restamped node listed as %+v, want the second stamp's fields %+v", r, p)
		}
	})

	// NodeRecord.Live on NodeList's now: live while the heartbeat is at
	// most NodeLiveBeats beats old on the store's clock, expired after.
	s.run(t, "LiveByStoreClock", func(t *testing.T, e *env) {
		e.needAdvance()
		p := nodeParams("n") // 10 s beat: live for 30 s
		e.nodeStamp(p)
		if r := e.nodeList(); !r.Nodes[0].Live(r.Now) {
			t.Fatalf("a node just stamped is not live at %v (heartbeat %v)", r.Now, r.Nodes[0].HeartbeatAt)
		}
		e.advance(store.NodeLiveBeats * p.Beat)
		if r := e.nodeList(); !r.Nodes[0].Live(r.Now) {
			t.Fatalf("a node %d beats old is not live at %v (heartbeat %v)", store.NodeLiveBeats, r.Now, r.Nodes[0].HeartbeatAt)
		}
		e.advance(time.Millisecond)
		if r := e.nodeList(); r.Nodes[0].Live(r.Now) {
			t.Fatalf("a node past %d beats old is live at %v (heartbeat %v)", store.NodeLiveBeats, r.Now, r.Nodes[0].HeartbeatAt)
		}
		e.nodeStamp(p)
		if r := e.nodeList(); !r.Nodes[0].Live(r.Now) {
			t.Fatalf("a restamped node is not live again at %v", r.Now)
		}
	})

	// NodeRemove: "removes node id's row. Removing a row the registry does
	// not hold is no error".
	s.run(t, "Remove", func(t *testing.T, e *env) {
		e.nodeStamp(nodeParams("a"))
		e.nodeStamp(nodeParams("b"))
		if err := e.s.NodeRemove(e.ctx, "a"); err != nil {
			t.Fatalf("NodeRemove(a): %v", err)
		}
		if got := nodeIDs(e.nodeList()); got != "b" {
			t.Fatalf("after removing a, NodeList ids %q, want b", got)
		}
		if err := e.s.NodeRemove(e.ctx, "a"); err != nil {
			t.Fatalf("NodeRemove of a row already gone: %v, want nil", err)
		}
	})

	// "removes every row, of any node, whose heartbeat is before now −
	// p.Forget".
	s.run(t, "Forget", func(t *testing.T, e *env) {
		e.needAdvance()
		e.nodeStamp(nodeParams("old"))
		e.advance(time.Minute)
		e.nodeStamp(nodeParams("new"))
		if got := nodeIDs(e.nodeList()); got != "new,old" {
			t.Fatalf("a row a minute old went under a one-hour horizon: %q", got)
		}
		e.advance(time.Minute)
		p := nodeParams("new")
		p.Forget = 90 * time.Second
		e.nodeStamp(p)
		if got := nodeIDs(e.nodeList()); got != "new" {
			t.Fatalf("after a stamp with a 90 s horizon, the other row 2 min old: %q, want new", got)
		}
	})

	// NodeStampParams.Validate: a refused stamp writes nothing.
	s.run(t, "Validation", func(t *testing.T, e *env) {
		many := make([]store.NodeGroup, store.MaxNodeGroups+1)
		for i := range many {
			many[i] = store.NodeGroup{Name: "g" + strings.Repeat("x", i)}
		}
		for name, edit := range map[string]func(p *store.NodeStampParams){
			"no id":          func(p *store.NodeStampParams) { p.ID = "" },
			"long id":        func(p *store.NodeStampParams) { p.ID = strings.Repeat("n", store.MaxNameLen+1) },
			"negative pid":   func(p *store.NodeStampParams) { p.PID = -1 },
			"negative run":   func(p *store.NodeStampParams) { p.Running = -1 },
			"no beat":        func(p *store.NodeStampParams) { p.Beat = 0 },
			"short forget":   func(p *store.NodeStampParams) { p.Forget = p.Beat },
			"long host":      func(p *store.NodeStampParams) { p.Host = strings.Repeat("h", store.MaxNodeHostLen+1) },
			"control host":   func(p *store.NodeStampParams) { p.Host = "a\nb" },
			"long version":   func(p *store.NodeStampParams) { p.Version = strings.Repeat("1", store.MaxNodeVersionLen+1) },
			"too many":       func(p *store.NodeStampParams) { p.Groups = many },
			"unnamed group":  func(p *store.NodeStampParams) { p.Groups = []store.NodeGroup{{Queues: []string{"q"}}} },
			"twice a group":  func(p *store.NodeStampParams) { p.Groups = append(p.Groups, p.Groups[0]) },
			"empty queue":    func(p *store.NodeStampParams) { p.Groups[0].Queues = []string{""} },
			"queue twice":    func(p *store.NodeStampParams) { p.Groups[0].Queues = []string{"q", "q"} },
			"too many queue": func(p *store.NodeStampParams) { p.Groups[0].Queues = make([]string, store.MaxNodeQueues+1) },
		} {
			p := nodeParams("bad")
			p.Groups = slices.Clone(p.Groups)
			edit(&p)
			if _, err := e.s.NodeStamp(e.ctx, p); !errors.Is(err, store.ErrInvalidParams) {
				t.Errorf("%s: NodeStamp = %v, want ErrInvalidParams", name, err)
			}
		}
		if err := e.s.NodeRemove(e.ctx, ""); !errors.Is(err, store.ErrInvalidParams) {
			t.Errorf("NodeRemove(\"\") = %v, want ErrInvalidParams", err)
		}
		if v := e.nodeList(); len(v.Nodes) != 0 {
			t.Fatalf("refused stamps wrote rows: %s", nodeIDs(v))
		}
	})
}
