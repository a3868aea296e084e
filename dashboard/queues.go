package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/backwave/backwave"
)

// queueRow is one Queue on the Queues page.
type queueRow struct {
	Info    backwave.QueueInfo
	AtLimit bool
	// Usage is Running against the limit, for a <meter>; 0 without one.
	Usage    int
	Counts   []stateCount
	JobsHref string
	Backlog  backlogCell
}

type queuesData struct {
	States []backwave.JobState
	Queues []queueRow
}

// queues lists every Queue with its settings, Running against its
// Concurrency Limit, and its counts by state.
func (s *server) queues(r *http.Request, _ Capabilities) (page, error) {
	ctx := r.Context()
	qs, err := s.reader.Queues(ctx)
	if err != nil {
		return page{}, err
	}
	counts, err := s.reader.CountByQueue(ctx)
	if err != nil {
		return page{}, err
	}
	backlog, err := s.backlog(ctx)
	if err != nil {
		return page{}, err
	}
	per := map[string]map[backwave.JobState]int{}
	for _, c := range counts {
		if per[c.Queue] == nil {
			per[c.Queue] = map[backwave.JobState]int{}
		}
		per[c.Queue][c.State] = c.Count
	}
	d := queuesData{States: backwave.JobStates()}
	for _, q := range qs {
		row := queueRow{Info: q, AtLimit: q.Limit > 0 && q.Running >= q.Limit, JobsHref: s.jobsHref(url.Values{"queue": {q.Name}}), Backlog: backlog[q.Name]}
		for _, st := range d.States {
			row.Counts = append(row.Counts, stateCount{State: st, Count: per[q.Name][st], Href: s.stateHref(q.Name, st)})
		}
		d.Queues = append(d.Queues, row)
	}
	return page{template: "queues", title: "Queues", data: d, nav: "/queues"}, nil
}

// formName reads the Queue or schedule a form acts on.
func formName(r *http.Request) (string, error) {
	n := r.PostForm.Get("name")
	if n == "" {
		return "", badRequest("the form names no queue or schedule")
	}
	return n, nil
}

func (s *server) pauseQueue(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	return s.backTo(r, "/queues"), a.PauseQueue(r.Context(), name)
}

func (s *server) resumeQueue(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	return s.backTo(r, "/queues"), a.ResumeQueue(r.Context(), name)
}

func (s *server) setQueueLimit(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(r.PostForm.Get("limit"))
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return "", badRequest("limit %q is not a whole number of at least 0 (0 removes the limit)", v)
	}
	return s.backTo(r, "/queues"), a.SetQueueLimit(r.Context(), name, n)
}
