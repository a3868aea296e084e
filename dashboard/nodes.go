package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/backwave/backwave"
)

// nodeRow is one node on the Nodes page.
type nodeRow struct {
	Info backwave.NodeInfo
	// HeartbeatAge is the last heartbeat's age at the store's now, roughly
	// ("12s ago").
	HeartbeatAge string
	// Groups are the node's Worker Groups with each Queue linked to its
	// jobs.
	Groups []nodeGroupCell
}

// nodeGroupCell is one Worker Group of a node row.
type nodeGroupCell struct {
	Name   string
	Queues []queueLink
}

// queueLink is a Queue name and its job list.
type queueLink struct {
	Name, Href string
}

type nodesData struct {
	// Now is the store's clock the registry was read at.
	Now   time.Time
	Nodes []nodeRow
	// Unserved are the Queues with ready jobs and no live node.
	Unserved []unservedQueue
}

// unservedQueue is a Queue with ready jobs that no live node serves, for
// the warning the Nodes page and the job list show.
type unservedQueue struct {
	queueLink
	// Ready is the Queue's ready count; with AtLeast, a lower bound.
	Ready   int
	AtLeast bool
}

// nodes lists the node registry: every running Client, live or expired on
// the store's clock, and the Queues with ready work no live node serves.
func (s *server) nodes(r *http.Request, _ Capabilities) (page, error) {
	ctx := r.Context()
	v, err := s.reader.Nodes(ctx)
	if err != nil {
		return page{}, err
	}
	d := nodesData{Now: v.Now}
	if needsBacklog(v, "") {
		backlog, err := s.backlog(ctx)
		if err != nil {
			return page{}, err
		}
		d.Unserved = s.unservedLinks(v, backlog, "")
	}
	for _, n := range v.Nodes {
		row := nodeRow{Info: n, HeartbeatAge: roughDuration(max(0, v.Now.Sub(n.HeartbeatAt))) + " ago"}
		for _, g := range n.Groups {
			cell := nodeGroupCell{Name: g.Name}
			for _, q := range g.Queues {
				cell.Queues = append(cell.Queues, queueLink{Name: q, Href: s.jobsHref(url.Values{"queue": {q}})})
			}
			row.Groups = append(row.Groups, cell)
		}
		d.Nodes = append(d.Nodes, row)
	}
	return page{template: "nodes", title: "Nodes", data: d, nav: "/nodes"}, nil
}

// unserved reads the node registry for a page that warns about Queues no
// live node serves. A failed read is logged and answers ok false: the page
// is still shown, without the warnings.
func (s *server) unserved(ctx context.Context) (backwave.NodesView, bool) {
	v, err := s.reader.Nodes(ctx)
	if err != nil {
		s.log.ErrorContext(ctx, "dashboard: read the node registry", "err", err)
		return backwave.NodesView{}, false
	}
	return v, true
}

// needsBacklog reports whether a warning about an unserved Queue could
// show: some Queue of v (only queue, when not empty) has no live node. A
// page that reads the backlog only for that warning (the job list) skips
// the read otherwise: with many Scheduled jobs it is the costliest read of
// the page (docs/dashboard.md has the timings).
func needsBacklog(v backwave.NodesView, queue string) bool {
	for _, q := range v.Queues {
		if (queue == "" || q.Queue == queue) && q.LiveNodes == 0 {
			return true
		}
	}
	return false
}

// unservedLinks lists the Queues (only queue, when not empty) that hold
// ready jobs and that no live node of v serves, in name order.
func (s *server) unservedLinks(v backwave.NodesView, backlog map[string]backlogCell, queue string) []unservedQueue {
	var out []unservedQueue
	for _, q := range v.Queues {
		if (queue == "" || q.Queue == queue) && q.LiveNodes == 0 && backlog[q.Queue].Ready > 0 {
			b := backlog[q.Queue]
			out = append(out, unservedQueue{queueLink: queueLink{Name: q.Queue, Href: s.jobsHref(url.Values{"queue": {q.Queue}})}, Ready: b.Ready, AtLeast: b.ReadyAtLeast})
		}
	}
	return out
}
