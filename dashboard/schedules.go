package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/backwave/backwave"
)

// skipsShown is how many recent skipped occurrences each schedule lists.
const skipsShown = 5

// scheduleRow is one Recurring Schedule on the schedules page.
type scheduleRow struct {
	Info         backwave.ScheduleInfo
	Words        string
	Zone         string
	LastJobHref  string
	Overdue      bool
	Skips        []skipView
	MoreSkips    bool
	WireJobsHref string
	// LastLocal and NextLocal are the occurrences in the schedule's own
	// zone; empty for UTC or a zone this host cannot load.
	LastLocal string
	NextLocal string
}

// skipView is one skipped occurrence record: No-Overlap or missed.
type skipView struct {
	First  time.Time
	At     time.Time
	Span   bool
	Reason string
}

type schedulesData struct {
	Schedules []scheduleRow
}

// schedules lists every Recurring Schedule: its spec in words and in cron,
// zone, last and next occurrence, recent skipped ticks and its controls.
func (s *server) schedules(r *http.Request, _ Capabilities) (page, error) {
	ctx := r.Context()
	list, err := s.reader.Schedules(ctx)
	if err != nil {
		return page{}, err
	}
	now := time.Now()
	var d schedulesData
	for _, sc := range list {
		row := scheduleRow{
			Info: sc, Words: describeCron(sc.Cron), Zone: sc.Zone,
			Overdue:      !sc.Paused && !sc.Next.IsZero() && now.Sub(sc.Next) > time.Minute,
			WireJobsHref: s.jobsHref(url.Values{"wire": {sc.WireName}}),
		}
		if row.Zone == "" {
			row.Zone = "UTC"
		} else if loc, err := time.LoadLocation(sc.Zone); err == nil {
			row.LastLocal = inZone(sc.Last, loc)
			row.NextLocal = inZone(sc.Next, loc)
		}
		if sc.LastJob != 0 {
			row.LastJobHref = s.jobHref(sc.LastJob)
		}
		skips, err := s.reader.ScheduleOccurrences(ctx, sc.Name, backwave.OccurrenceListParams{
			Kinds: []backwave.OccurrenceKind{backwave.OccurrenceSkipped}, PageParams: backwave.PageParams{Limit: skipsShown},
		})
		if err != nil {
			return page{}, err
		}
		for _, o := range skips.Items {
			reason := "missed"
			if o.Reason == backwave.SkipOverlap {
				reason = "No-Overlap"
			}
			row.Skips = append(row.Skips, skipView{First: o.First, At: o.At, Span: !o.First.Equal(o.At), Reason: reason})
		}
		row.MoreSkips = skips.Next != 0
		d.Schedules = append(d.Schedules, row)
	}
	return page{template: "schedules", title: "Recurring Schedules", data: d, nav: "/schedules"}, nil
}

func inZone(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

func (s *server) triggerSchedule(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	id, err := a.TriggerSchedule(r.Context(), name)
	if err != nil {
		return "", err
	}
	return "/jobs/" + strconv.FormatInt(int64(id), 10), nil
}

func (s *server) pauseSchedule(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	return s.backTo(r, "/schedules"), a.PauseSchedule(r.Context(), name)
}

func (s *server) resumeSchedule(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	return s.backTo(r, "/schedules"), a.ResumeSchedule(r.Context(), name)
}

func (s *server) removeSchedule(r *http.Request, a *backwave.Admin) (string, error) {
	name, err := formName(r)
	if err != nil {
		return "", err
	}
	if r.PostForm.Get("confirm") != name {
		return "", badRequest("type the schedule's name to confirm its removal")
	}
	return "/schedules", a.RemoveSchedule(r.Context(), name)
}

// auditRow is one audit-trail entry.
type auditRow struct {
	E       backwave.AuditEntry
	Action  string
	JobHref string
}

type auditData struct {
	Rows     []auditRow
	NextHref string
	Job      string
	Queue    string
	Paged    bool
}

// audit lists the audit trail: who did what, when, to which job, Queue or
// schedule; newest first, by keyset.
func (s *server) audit(r *http.Request, _ Capabilities) (page, error) {
	q := r.URL.Query()
	var p backwave.AuditListParams
	d := auditData{Job: q.Get("job"), Queue: q.Get("queue")}
	if d.Job != "" {
		n, err := strconv.ParseInt(d.Job, 10, 64)
		if err != nil || n <= 0 {
			return page{}, badRequest("job %q is not a job id", d.Job)
		}
		p.JobID = backwave.JobID(n)
	}
	p.Queue = d.Queue
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return page{}, badRequest("before %q is not an audit entry", v)
		}
		p.Before = backwave.Cursor(n)
		d.Paged = true
	}
	p.Limit = 100
	res, err := s.reader.Audit(r.Context(), p)
	if err != nil {
		return page{}, err
	}
	for _, e := range res.Items {
		row := auditRow{E: e, Action: e.Action.String()}
		if e.JobID != 0 {
			row.JobHref = s.jobHref(e.JobID)
		}
		d.Rows = append(d.Rows, row)
	}
	if res.Next != 0 {
		v := url.Values{}
		if d.Job != "" {
			v.Set("job", d.Job)
		}
		if d.Queue != "" {
			v.Set("queue", d.Queue)
		}
		v.Set("before", strconv.FormatInt(int64(res.Next), 10))
		d.NextHref = s.url("/audit") + "?" + v.Encode()
	}
	return page{template: "audit", title: "Audit trail", data: d, nav: "/audit"}, nil
}
