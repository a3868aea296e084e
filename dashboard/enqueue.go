package dashboard

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/backwave/backwave"
)

// enqueueData is the enqueue form's data: the Queues the store knows,
// offered as suggestions.
type enqueueData struct {
	Queues []string
	// Budget is the attempt budget an empty field gives.
	Budget int
}

// enqueueForm serves the form an operator enqueues a job by hand with. A
// caller without the Enqueue permission sees why it cannot.
func (s *server) enqueueForm(r *http.Request, _ Capabilities) (page, error) {
	d := enqueueData{Budget: backwave.DefaultMaxAttempts}
	qs, err := s.reader.Queues(r.Context())
	if err != nil {
		return page{}, err
	}
	for _, q := range qs {
		d.Queues = append(d.Queues, q.Name)
	}
	return page{template: "enqueue", title: "Enqueue a job", data: d, nav: "/enqueue"}, nil
}

// enqueue performs the Operator Action: one job from the form's Wire Name,
// Queue, JSON payload, due time and attempt budget, audited with the
// caller's Actor. It sends the browser to the new job's page.
func (s *server) enqueue(r *http.Request, a *backwave.Admin) (string, error) {
	f := r.PostForm
	at, _, err := parseTimeField("at", f.Get("at"))
	if err != nil {
		return "", err
	}
	p := backwave.OperatorEnqueue{
		WireName: strings.TrimSpace(f.Get("wire_name")),
		Queue:    strings.TrimSpace(f.Get("queue")),
		Payload:  []byte(f.Get("payload")),
		RunAt:    at,
	}
	if v := strings.TrimSpace(f.Get("max_attempts")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", badRequest("max_attempts %q is not a number of at least 1", v)
		}
		p.MaxAttempts = n
	}
	info, err := a.Enqueue(r.Context(), p)
	if err != nil {
		return "", err
	}
	return jobPath(info.ID), nil
}
