package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
	// Keys are the Queue's Concurrency Keys with the most Scheduled and
	// Running jobs (dashboardTopKeys of them).
	Keys []keyCell
	// KeysFailed is set when the store could not answer for the keys.
	KeysFailed bool
	// Empty is set when the Queue holds no job in any state: it can be
	// removed (Admin.RemoveQueue).
	Empty bool
	// Unserved is set when the Queue has ready jobs and no live node
	// serves it.
	Unserved bool
}

// keyCell is one of a Queue's top Concurrency Keys.
type keyCell struct {
	Key                string
	Scheduled, Running int
}

// dashboardTopKeys is how many of a Queue's top keys its row shows.
const dashboardTopKeys = 5

type queuesData struct {
	States []backwave.JobState
	Queues []queueRow
	// Columns is how many columns a Queue's row has: its controls row
	// spans them all.
	Columns int
}

// queueColumns is how many columns a Queue's row has besides one per
// state: name, status, running, Rate Limit, keys, ready, later, oldest.
const queueColumns = 8

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
	nodes, nodesOK := s.unserved(ctx)
	per := map[string]map[backwave.JobState]int{}
	for _, c := range counts {
		if per[c.Queue] == nil {
			per[c.Queue] = map[backwave.JobState]int{}
		}
		per[c.Queue][c.State] = c.Count
	}
	d := queuesData{States: backwave.JobStates()}
	d.Columns = queueColumns + len(d.States)
	for _, q := range qs {
		row := queueRow{Info: q, AtLimit: q.Limit > 0 && q.Running >= q.Limit, JobsHref: s.jobsHref(url.Values{"queue": {q.Name}}),
			Backlog: backlog[q.Name], Empty: len(per[q.Name]) == 0,
			Unserved: nodesOK && backlog[q.Name].Ready > 0 && !nodes.Served(q.Name)}
		for _, st := range d.States {
			row.Counts = append(row.Counts, stateCount{State: st, Count: per[q.Name][st], Href: s.stateHref(q.Name, st)})
		}
		keys, err := s.reader.QueueKeys(ctx, q.Name, dashboardTopKeys)
		if err != nil {
			// One Queue's keys failing to read leaves the rest of the page:
			// the row says so and the error goes to the server log.
			s.log.ErrorContext(ctx, "dashboard: read the top keys of a queue", "queue", q.Name, "err", err)
			row.KeysFailed = true
		}
		for _, k := range keys {
			row.Keys = append(row.Keys, keyCell{Key: k.Key, Scheduled: k.Scheduled, Running: k.Running})
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

// removeQueue removes an empty Queue; the store refuses one holding jobs
// (a job may have arrived since the page showed the button).
func (s *server) removeQueue(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	return s.backTo(r, "/queues"), a.RemoveQueue(r.Context(), name)
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

// setQueueRate sets or removes a Queue's Rate Limit: a whole number of
// starts per period, or 0 with no period to remove it.
func (s *server) setQueueRate(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	rate, err := formRate(r, "rate_limit", "rate_period", "rate")
	if err != nil {
		return "", err
	}
	return s.backTo(r, "/queues"), a.SetQueueRate(r.Context(), name, rate)
}

// formRate reads a rate (Rate Limit or Key Rate) from the form's limit and
// period fields: 0 with no period is the zero QueueRate, which removes it.
func formRate(r *http.Request, limitField, periodField, what string) (backwave.QueueRate, error) {
	lv, pv := strings.TrimSpace(r.PostForm.Get(limitField)), strings.TrimSpace(r.PostForm.Get(periodField))
	if lv == "0" && pv == "" {
		return backwave.QueueRate{}, nil
	}
	n, err := strconv.Atoi(lv)
	if err != nil || n < 1 {
		return backwave.QueueRate{}, badRequest("%s %q is not a whole number of at least 1 (0 with no period removes it)", what, lv)
	}
	d, err := time.ParseDuration(pv)
	if err != nil || d <= 0 {
		return backwave.QueueRate{}, badRequest("%s period %q is not a positive duration such as 1s or 1m", what, pv)
	}
	return backwave.QueueRate{Limit: n, Period: d}, nil
}

func (s *server) setKeyLimit(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(r.PostForm.Get("key_limit"))
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return "", badRequest("key limit %q is not a whole number of at least 0 (0 removes the Key Limit)", v)
	}
	if n == 0 {
		return s.backTo(r, "/queues"), a.RemoveKeyLimit(r.Context(), name)
	}
	return s.backTo(r, "/queues"), a.SetKeyLimit(r.Context(), name, n)
}

func (s *server) setKeyRate(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	rate, err := formRate(r, "key_rate_limit", "key_rate_period", "key rate")
	if err != nil {
		return "", err
	}
	return s.backTo(r, "/queues"), a.SetKeyRate(r.Context(), name, rate)
}

func (s *server) setFairClaim(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	var on bool
	switch v := r.PostForm.Get("fair"); v {
	case "on":
		on = true
	case "off":
	default:
		return "", badRequest("fair claim %q is neither on nor off", v)
	}
	return s.backTo(r, "/queues"), a.SetFairClaim(r.Context(), name, on)
}
