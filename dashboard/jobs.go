package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/backwave/backwave"
)

// facetLimit is how many Tag Facet buckets the job list shows.
const facetLimit = 10

// failureRunes bounds the Failure Detail line a job list row shows.
const failureRunes = 120

// jobRow is one job as a list shows it: never its payload.
type jobRow struct {
	ID          backwave.JobID
	Href        string
	WireName    string
	Queue       string
	State       backwave.JobState
	Attempt     backwave.Attempt
	Ceiling     int
	RetryCause  string
	Tags        []tagLink
	CreatedAt   time.Time
	ScheduledAt time.Time
	FinalizedAt time.Time
	Requeuable  bool
	Cancellable bool
	// Overdue is set on a Scheduled job past its due time whose Queue no
	// live node serves (jobList).
	Overdue   bool
	Deletable bool
	// Failure is the first line of the last Failure Detail of a job whose
	// state a failure explains, for a caller holding ViewSensitiveData.
	Failure string
}

// tagLink is a Tag with the job list filtered by it.
type tagLink struct {
	Tag  backwave.Tag
	Href string
}

func (s *server) jobHref(id backwave.JobID) string {
	return s.url("/jobs/" + strconv.FormatInt(int64(id), 10))
}

func (s *server) tagHref(t backwave.Tag) string {
	q := url.Values{}
	addTag(q, t)
	return s.jobsHref(q)
}

func (s *server) row(j backwave.JobInfo) jobRow {
	r := jobRow{
		ID: j.ID, Href: s.jobHref(j.ID), WireName: j.WireName, Queue: j.Queue, State: j.State,
		Attempt: j.Attempt, Ceiling: j.Ceiling, RetryCause: j.RetryCause.String(),
		CreatedAt: j.CreatedAt, ScheduledAt: j.ScheduledAt, FinalizedAt: j.FinalizedAt,
		Requeuable:  j.State == backwave.StateDeadLettered || j.State == backwave.StateQuarantined,
		Cancellable: j.State.Live() && !j.CancelRequested,
		Deletable:   j.State.Terminal(),
	}
	for _, t := range j.Tags {
		r.Tags = append(r.Tags, tagLink{Tag: t, Href: s.tagHref(t)})
	}
	return r
}

// facetLink is one Tag Facet bucket with the list narrowed by it.
type facetLink struct {
	Tag   backwave.Tag
	Count int
	Href  string
	// Active marks a Tag already in the filter.
	Active bool
}

// chip is one Tag of the filter with the list widened without it.
type chip struct {
	Tag        backwave.Tag
	RemoveHref string
}

type jobListData struct {
	Form   listForm
	States []stateOption
	Queues []string
	Rows   []jobRow
	// FacetHref is the Tag Facet of this slice, loaded beside the list
	// by the script (or followed as a link): see jobFacet.
	FacetHref string
	Chips     []chip
	Ambiguous []tagLink
	NextHref  string
	FirstHref string
	Paged     bool
	Notice    string
	// Unserved are the Queues of the list (the filter's, or every one)
	// with ready jobs and no live node.
	Unserved []unservedQueue
	// Matching are the "… all matching" controls, under a filter.
	Matching []matchingLink
}

// stateOption is one state checkbox of the filter form.
type stateOption struct {
	Value   string
	Label   string
	Checked bool
}

func (s *server) jobList(r *http.Request, c Capabilities) (page, error) {
	ctx := r.Context()
	q := r.URL.Query()
	f, err := s.parseListForm(ctx, q)
	if err != nil {
		return page{}, err
	}
	filter := f.filter()
	res, err := s.listPage(ctx, filter, f.Before, f.Limit)
	if err != nil {
		return page{}, err
	}
	queues, err := s.reader.Queues(ctx)
	if err != nil {
		return page{}, err
	}
	d := jobListData{Form: f, Paged: f.Before != 0, Notice: bulkNotice(q), Matching: s.matchingLinks(f, c)}
	for _, st := range backwave.JobStates() {
		d.States = append(d.States, stateOption{Value: st.String(), Label: stateLabel(st), Checked: containsState(f.States, st)})
	}
	for _, qi := range queues {
		d.Queues = append(d.Queues, qi.Name)
	}
	nodes, nodesOK := s.unserved(ctx)
	if nodesOK && needsBacklog(nodes, f.Queue) {
		backlog, err := s.backlog(ctx)
		if err != nil {
			return page{}, err
		}
		d.Unserved = s.unservedLinks(nodes, backlog, f.Queue)
	}
	for _, j := range res.Items {
		row := s.row(j)
		row.Overdue = nodesOK && j.State == backwave.StateScheduled && !j.ScheduledAt.After(nodes.Now) && !nodes.Served(j.Queue)
		if c.Sensitive && j.HasFailed() {
			if row.Failure, err = s.reader.LastFailure(ctx, j.ID, failureRunes); err != nil {
				return page{}, err
			}
		}
		d.Rows = append(d.Rows, row)
	}
	d.FacetHref = s.url("/jobs/facet")
	if v := f.values().Encode(); v != "" {
		d.FacetHref += "?" + v
	}
	for i, t := range f.Tags {
		d.Chips = append(d.Chips, chip{Tag: t, RemoveHref: s.jobsHref(f.withoutTag(i))})
	}
	for _, t := range f.Ambiguous {
		d.Ambiguous = append(d.Ambiguous, tagLink{Tag: t, Href: s.jobsHref(f.withTag(t))})
	}
	if res.Next != 0 {
		v := f.values()
		v.Set("before", strconv.FormatInt(int64(res.Next), 10))
		d.NextHref = s.jobsHref(v)
	}
	d.FirstHref = s.jobsHref(f.values())
	return page{template: "jobs", title: "Jobs", data: d, nav: "/jobs"}, nil
}

// listPage reads one page of the job list, asking for one job more than it
// shows, so that a page is followed by an "Older" link only when an older
// job exists (Admin pages may otherwise end on an empty one).
func (s *server) listPage(ctx context.Context, f backwave.JobFilter, before backwave.Cursor, limit int) (backwave.Page[backwave.JobInfo], error) {
	if limit == 0 {
		limit = backwave.DefaultPageLimit
	}
	res, err := s.reader.Jobs(ctx, backwave.JobListParams{JobFilter: f, PageParams: backwave.PageParams{Before: before, Limit: limit + 1}})
	if err != nil {
		return res, err
	}
	res.Next = 0
	if len(res.Items) > limit {
		res.Items = res.Items[:limit]
		res.Next = backwave.Cursor(res.Items[limit-1].ID)
	}
	return res, nil
}

type facetData struct {
	Facet    []facetLink
	ListHref string
}

// jobFacet is the Tag Facet of a job-list slice, its own request so that
// the list never waits for it: the facet groups every Tag of the slice,
// which on a large store takes longer than the page of jobs beside it.
func (s *server) jobFacet(r *http.Request, _ Capabilities) (page, error) {
	ctx := r.Context()
	f, err := s.parseListForm(ctx, r.URL.Query())
	if err != nil {
		return page{}, err
	}
	facet, err := s.reader.TagFacet(ctx, f.filter(), facetLimit)
	if err != nil {
		return page{}, err
	}
	d := facetData{ListHref: s.jobsHref(f.values())}
	for _, b := range facet {
		d.Facet = append(d.Facet, facetLink{Tag: b.Tag, Count: b.Count, Href: s.jobsHref(f.withTag(b.Tag)), Active: containsTag(f.Tags, b.Tag)})
	}
	return page{template: "facet", title: "Tag Facet", data: d, nav: "/jobs"}, nil
}

func containsState(sts []backwave.JobState, st backwave.JobState) bool {
	for _, x := range sts {
		if x == st {
			return true
		}
	}
	return false
}

func containsTag(ts []backwave.Tag, t backwave.Tag) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// bulkNotice reads the outcome of a bulk action from the redirect's query:
// only an action name this package writes and two counts, so a crafted
// link cannot put words on the page.
func bulkNotice(q url.Values) string {
	verb := noticeVerb(q.Get("done"))
	if verb == "" {
		return ""
	}
	ok, err1 := strconv.Atoi(q.Get("ok"))
	failed, err2 := strconv.Atoi(q.Get("failed"))
	if err1 != nil || err2 != nil || ok < 0 || failed < 0 {
		return ""
	}
	msg := fmt.Sprintf("%d %s %s.", ok, plural(ok, "job", "jobs"), verb)
	switch {
	case failed > 0 && verb == "deleted":
		msg += fmt.Sprintf(" %d could not be deleted: their state no longer allows it, or other jobs still need them.", failed)
	case failed > 0:
		msg += fmt.Sprintf(" %d could not be %s: their state no longer allows it.", failed, verb)
	}
	return msg + moreNotice(q)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sensitive is raw content gated by ViewSensitiveData: Shown is false, and
// Text empty, without the permission — the content is never sent.
type sensitive struct {
	Shown bool
	Text  string
	// Empty says there is nothing to show (no output, no detail).
	Empty bool
}

func gate(c Capabilities, b []byte) sensitive {
	if !c.Sensitive {
		return sensitive{Empty: len(b) == 0}
	}
	return sensitive{Shown: true, Text: string(b), Empty: len(b) == 0}
}

// transitionView is one Transition Log entry of the timeline.
type transitionView struct {
	At            time.Time
	From          backwave.JobState
	State         backwave.JobState
	Via           string
	Attempt       backwave.Attempt
	FailureDetail sensitive
}

// edgeView is one Dependency edge, linked.
type edgeView struct {
	ID      backwave.JobID
	Href    string
	State   backwave.JobState
	Counted bool
}

// cursorView is a job's Cursor on its page.
type cursorView struct {
	Attempt backwave.Attempt
	At      time.Time
	Value   sensitive
}

type jobDetailData struct {
	Row         jobRow
	MaxAttempts int
	Snoozes     int
	CancelCause string
	// EndedBecause is why a Dead-Lettered or Quarantined job ended so
	// (JobInfo.EndedBecause); "" in any other state.
	EndedBecause    string
	CancelRequested bool
	Worker          string
	LeaseExpiresAt  time.Time
	Payload         sensitive
	Output          sensitive
	// Cursor is the job's Cursor, its value gated as the payload is; nil
	// when the job has none.
	Cursor      *cursorView
	Transitions []transitionView
	// Rewrites are the job's Replace and Debounce rewrites, oldest first.
	Rewrites        []backwave.AuditEntry
	Mode            string
	Pending         int
	Parents         []edgeView
	Dependents      []edgeView
	Reschedulable   bool
	RescheduleValue string
}

func (s *server) jobDetail(r *http.Request, c Capabilities) (page, error) {
	ctx := r.Context()
	id, err := pathID(r)
	if err != nil {
		return page{}, err
	}
	jd, err := s.reader.Job(ctx, id)
	if err != nil {
		return page{}, err
	}
	deps, err := s.reader.Dependencies(ctx, id)
	if err != nil {
		return page{}, err
	}
	j := jd.Job
	d := jobDetailData{
		Row: s.row(j), MaxAttempts: j.MaxAttempts, Snoozes: j.Snoozes, CancelCause: j.CancelCause.String(),
		EndedBecause: j.EndedBecause(), CancelRequested: j.CancelRequested, Worker: j.Worker, LeaseExpiresAt: j.LeaseExpiresAt,
		Payload: gate(c, j.Payload), Output: gate(c, jd.Output),
		Reschedulable:   j.State == backwave.StateScheduled || j.State == backwave.StateAwaitingParent,
		RescheduleValue: j.ScheduledAt.UTC().Format("2006-01-02T15:04"),
		Pending:         deps.Pending,
		Rewrites:        jd.Rewrites,
	}
	if cur := j.Cursor; cur != nil {
		d.Cursor = &cursorView{Attempt: cur.Attempt, At: cur.At, Value: gate(c, cur.Value)}
	}
	for _, t := range jd.Transitions {
		d.Transitions = append(d.Transitions, transitionView{
			At: t.At, From: t.From, State: t.State, Via: t.Via.String(), Attempt: t.Attempt,
			FailureDetail: gate(c, []byte(t.FailureDetail)),
		})
	}
	if len(deps.Parents) > 0 {
		d.Mode = deps.Mode.String()
	}
	for _, p := range deps.Parents {
		d.Parents = append(d.Parents, edgeView{ID: p.ID, Href: s.jobHref(p.ID), State: p.State, Counted: p.Counted})
	}
	for _, id := range deps.Dependents {
		d.Dependents = append(d.Dependents, edgeView{ID: id, Href: s.jobHref(id)})
	}
	return page{template: "job", title: fmt.Sprintf("Job %d", j.ID), data: d, nav: "/jobs"}, nil
}

func pathID(r *http.Request) (backwave.JobID, error) {
	v := r.PathValue("id")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, &httpError{status: http.StatusNotFound, msg: fmt.Sprintf("%q is not a job id", v)}
	}
	return backwave.JobID(n), nil
}

func jobPath(id backwave.JobID) string { return "/jobs/" + strconv.FormatInt(int64(id), 10) }

func (s *server) requeue(r *http.Request, a *backwave.Admin) (string, error) {
	id, err := pathID(r)
	if err != nil {
		return "", err
	}
	if _, err := a.Requeue(r.Context(), id); err != nil {
		return "", err
	}
	return s.backTo(r, jobPath(id)), nil
}

func (s *server) cancel(r *http.Request, a *backwave.Admin) (string, error) {
	id, err := pathID(r)
	if err != nil {
		return "", err
	}
	if _, err := a.Cancel(r.Context(), id); err != nil {
		return "", err
	}
	return s.backTo(r, jobPath(id)), nil
}

func (s *server) reschedule(r *http.Request, a *backwave.Admin) (string, error) {
	id, err := pathID(r)
	if err != nil {
		return "", err
	}
	at, _, err := parseTimeField("at", r.PostForm.Get("at"))
	if err != nil {
		return "", err
	}
	if at.IsZero() {
		return "", badRequest("reschedule needs a new due time (at)")
	}
	if _, err := a.Reschedule(r.Context(), id, at); err != nil {
		return "", err
	}
	return s.backTo(r, jobPath(id)), nil
}

// maxBulk bounds one bulk action: one page of the list at most.
const maxBulk = 1000

// bulk applies one job action to every selected id. A job whose state no
// longer allows the action is counted, not fatal: the others still apply.
func (s *server) bulk(verb string, act func(*http.Request, *backwave.Admin, backwave.JobID) error) actionFunc {
	return func(r *http.Request, a *backwave.Admin) (string, error) {
		ids := r.PostForm["id"]
		if len(ids) == 0 {
			return "", badRequest("no job selected")
		}
		if len(ids) > maxBulk {
			return "", badRequest("%d jobs selected; at most %d at once", len(ids), maxBulk)
		}
		parsed := make([]backwave.JobID, 0, len(ids))
		for _, v := range ids {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return "", badRequest("%q is not a job id", v)
			}
			parsed = append(parsed, backwave.JobID(n))
		}
		ok, failed := 0, 0
		for _, id := range parsed {
			err := act(r, a, id)
			switch {
			case err == nil:
				ok++
			case errors.Is(err, backwave.ErrIllegalTransition), errors.Is(err, backwave.ErrNotFound), errors.Is(err, backwave.ErrStillNeeded):
				failed++
			default:
				return "", err
			}
		}
		back, err := url.Parse(s.backTo(r, "/jobs"))
		if err != nil {
			return "", fmt.Errorf("dashboard: bulk %s: back path: %w", verb, err)
		}
		q := back.Query()
		q.Set("done", verb)
		q.Set("ok", strconv.Itoa(ok))
		q.Set("failed", strconv.Itoa(failed))
		back.RawQuery = q.Encode()
		return back.String(), nil
	}
}
