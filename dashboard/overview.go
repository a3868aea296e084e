package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/backwave/backwave"
)

// overviewRetrying is how many Retrying jobs the overview lists.
const overviewRetrying = 10

// stateCount is one state's count, with the job list it links to.
type stateCount struct {
	State backwave.JobState
	Count int
	Href  string
}

// queueCounts is one Queue's row of the overview.
type queueCounts struct {
	Info    backwave.QueueInfo
	Known   bool // the Queue has settings (Queues lists it)
	Counts  []stateCount
	Total   int
	Href    string
	Backlog backlogCell
}

type overviewData struct {
	States       []backwave.JobState
	Totals       []stateCount
	Total        int
	Queues       []queueCounts
	Retrying     []jobRow
	RetryingMore bool
	RetryingHref string
	Quarantined  stateCount
	DeadLettered stateCount
	Paused       []backwave.QueueInfo
	AtLimit      []backwave.QueueInfo
	Throughput   throughputView
	// Replica is the read replica's state, when the reads go to one that
	// reports its lag.
	Replica *replicaView
}

// replicaLagger is a read replica that reports its replay lag
// (postgres.Replica).
type replicaLagger interface {
	ReplicaLag(ctx context.Context) (lag time.Duration, serving bool, reason error)
}

// replicaView is the overview's line on the read replica.
type replicaView struct {
	Lag     time.Duration
	Serving bool
	Reason  string
}

func (s *server) replicaView(ctx context.Context) *replicaView {
	l, ok := s.replica.(replicaLagger)
	if !ok {
		return nil
	}
	lag, serving, reason := l.ReplicaLag(ctx)
	v := &replicaView{Lag: lag.Round(time.Millisecond), Serving: serving}
	if reason != nil {
		v.Reason = reason.Error()
	}
	return v
}

func (s *server) jobsHref(q url.Values) string {
	if len(q) == 0 {
		return s.url("/jobs")
	}
	return s.url("/jobs") + "?" + q.Encode()
}

func (s *server) stateHref(queue string, st backwave.JobState) string {
	q := url.Values{"state": {st.String()}}
	if queue != "" {
		q.Set("queue", queue)
	}
	return s.jobsHref(q)
}

// overview is the landing page: counts by Queue and state (from the
// store's maintained counters), throughput, the Retrying and Quarantined
// call-outs, paused Queues and Queues at their Concurrency Limit.
func (s *server) overview(r *http.Request, _ Capabilities) (page, error) {
	ctx := r.Context()
	byQueue, err := s.reader.CountByQueue(ctx)
	if err != nil {
		return page{}, err
	}
	queues, err := s.reader.Queues(ctx)
	if err != nil {
		return page{}, err
	}
	retrying, err := s.reader.Retrying(ctx, "", backwave.PageParams{Limit: overviewRetrying})
	if err != nil {
		return page{}, err
	}
	backlog, err := s.backlog(ctx)
	if err != nil {
		return page{}, err
	}
	d := overviewData{States: backwave.JobStates(), Replica: s.replicaView(ctx)}
	totals := map[backwave.JobState]int{}
	perQueue := map[string]map[backwave.JobState]int{}
	var order []string
	for _, c := range byQueue {
		totals[c.State] += c.Count
		m, ok := perQueue[c.Queue]
		if !ok {
			m = map[backwave.JobState]int{}
			perQueue[c.Queue] = m
			order = append(order, c.Queue)
		}
		m[c.State] += c.Count
	}
	now := time.Now()
	finished, err := s.reader.Throughput(ctx, now.Add(-throughputWindow))
	if err != nil {
		return page{}, err
	}
	d.Throughput = throughputOf(now, finished)
	for _, st := range d.States {
		d.Totals = append(d.Totals, stateCount{State: st, Count: totals[st], Href: s.stateHref("", st)})
		d.Total += totals[st]
	}
	d.Quarantined = stateCount{State: backwave.StateQuarantined, Count: totals[backwave.StateQuarantined], Href: s.stateHref("", backwave.StateQuarantined)}
	d.DeadLettered = stateCount{State: backwave.StateDeadLettered, Count: totals[backwave.StateDeadLettered], Href: s.stateHref("", backwave.StateDeadLettered)}

	infos := map[string]backwave.QueueInfo{}
	for _, q := range queues {
		infos[q.Name] = q
		if _, ok := perQueue[q.Name]; !ok {
			perQueue[q.Name] = map[backwave.JobState]int{}
			order = append(order, q.Name)
		}
		if q.Paused {
			d.Paused = append(d.Paused, q)
		}
		if q.Limit > 0 && q.Running >= q.Limit {
			d.AtLimit = append(d.AtLimit, q)
		}
	}
	sortStrings(order)
	for _, name := range order {
		info, known := infos[name]
		if !known {
			info = backwave.QueueInfo{Name: name}
		}
		row := queueCounts{Info: info, Known: known, Href: s.jobsHref(url.Values{"queue": {name}}), Backlog: backlog[name]}
		for _, st := range d.States {
			n := perQueue[name][st]
			row.Counts = append(row.Counts, stateCount{State: st, Count: n, Href: s.stateHref(name, st)})
			row.Total += n
		}
		d.Queues = append(d.Queues, row)
	}
	for _, j := range retrying.Items {
		d.Retrying = append(d.Retrying, s.row(j))
	}
	d.RetryingMore = retrying.Next != 0
	d.RetryingHref = s.jobsHref(url.Values{"retrying": {"1"}})
	return page{template: "overview", title: "Overview", data: d, nav: "/"}, nil
}
