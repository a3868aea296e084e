package dashboard

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/backwave/backwave"
)

// The actions on every job a filter matches: a confirm page (GET
// /jobs/matching?action=…&<filter>) shows what Admin.PreviewMatching
// counts, and its form posts the same filter to /jobs/matching/<action>,
// behind the action's Permission and the cross-origin check like every
// write.

// matchingLink is one "… all matching" control of the job list.
type matchingLink struct {
	Label string
	Href  string
}

// matchingData is the confirm page of a bulk action.
type matchingData struct {
	// Message, when set, is all the page says: no action was asked for.
	Message string
	Action  string
	Verb    string
	Done    string
	Preview backwave.BulkPreview
	// Fields are the filter as hidden form fields, posted back as they
	// are.
	Fields []formField
	// PostPath is the action's POST route, below the prefix.
	PostPath string
	ListHref string
	Allowed  bool
	Limit    int
	MaxLimit int
}

// formField is one hidden field of a form.
type formField struct{ Name, Value string }

// bulkVerbs names each bulk action as a sentence says it.
var bulkVerbs = map[backwave.BulkAction][2]string{
	backwave.BulkRequeue: {"Requeue", "requeued"},
	backwave.BulkCancel:  {"Cancel", "cancelled"},
	backwave.BulkDelete:  {"Delete", "deleted"},
}

// matchingLinks are the job list's "… all matching" controls: only under
// a filter, only for the actions the caller may take.
func (s *server) matchingLinks(f listForm, c Capabilities) []matchingLink {
	if !f.filtered() {
		return nil
	}
	var out []matchingLink
	for _, a := range []struct {
		action backwave.BulkAction
		can    bool
	}{{backwave.BulkRequeue, c.Requeue}, {backwave.BulkCancel, c.Cancel}, {backwave.BulkDelete, c.Delete}} {
		if !a.can {
			continue
		}
		q := f.values()
		q.Del("limit")
		q.Set("action", a.action.String())
		out = append(out, matchingLink{Label: bulkVerbs[a.action][0] + " all matching…", Href: s.url("/jobs/matching") + "?" + q.Encode()})
	}
	return out
}

// filtered reports whether f narrows the list at all: a bulk action over
// every job of the store is not offered.
func (f listForm) filtered() bool {
	return len(f.States) > 0 || f.Queue != "" || f.WireName != "" || len(f.Tags) > 0 || f.Retrying || !f.From.IsZero() || !f.To.IsZero()
}

// matchingConfirm is the confirm step of a bulk action: how many jobs the
// filter matches and how many the action applies to, and the form that
// acts.
func (s *server) matchingConfirm(r *http.Request, c Capabilities) (page, error) {
	ctx := r.Context()
	q := r.URL.Query()
	if q.Get("action") == "" {
		return page{template: "matching", title: "Act on all matching jobs", data: matchingData{Message: "Set a filter on the job list, then pick the action for every job it matches.", ListHref: s.url("/jobs")}, nav: "/jobs"}, nil
	}
	action, err := backwave.ParseBulkAction(q.Get("action"))
	if err != nil {
		return page{}, badRequest("action %q is not requeue, cancel or delete", q.Get("action"))
	}
	f, err := s.parseListForm(ctx, q)
	if err != nil {
		return page{}, err
	}
	if !f.filtered() {
		return page{}, badRequest("set a filter first: a bulk action over every job of the store is not offered")
	}
	p, err := s.reader.PreviewMatching(ctx, action, f.filter())
	if err != nil {
		return page{}, err
	}
	v := f.values()
	v.Del("limit")
	d := matchingData{
		Action: action.String(), Verb: bulkVerbs[action][0], Done: bulkVerbs[action][1], Preview: p,
		PostPath: "/jobs/matching/" + action.String(), ListHref: s.jobsHref(v),
		Allowed: map[backwave.BulkAction]bool{backwave.BulkRequeue: c.Requeue, backwave.BulkCancel: c.Cancel, backwave.BulkDelete: c.Delete}[action],
		Limit:   backwave.DefaultBulkLimit, MaxLimit: backwave.MaxBulkLimit,
	}
	for name, vals := range v {
		for _, val := range vals {
			d.Fields = append(d.Fields, formField{name, val})
		}
	}
	return page{template: "matching", title: d.Verb + " all matching jobs", data: d, nav: "/jobs"}, nil
}

// matching performs action on the jobs the posted filter matches, at most
// the posted limit, and returns to the list under that filter with the
// outcome in its query (bulkNotice).
func (s *server) matching(action backwave.BulkAction) actionFunc {
	return func(r *http.Request, a *backwave.Admin) (string, error) {
		ctx := r.Context()
		f, err := s.parseListForm(ctx, r.PostForm)
		if err != nil {
			return "", err
		}
		if !f.filtered() {
			return "", badRequest("a bulk action needs a filter")
		}
		limit := backwave.DefaultBulkLimit
		if raw := r.PostForm.Get("bulk_limit"); raw != "" {
			if limit, err = strconv.Atoi(raw); err != nil {
				return "", badRequest("limit %q is not a number", raw)
			}
		}
		res, err := a.Matching(ctx, action, f.filter(), backwave.BulkOptions{Limit: limit})
		if err != nil {
			return "", err
		}
		q := f.values()
		q.Del("limit")
		q.Set("done", action.String())
		q.Set("ok", strconv.Itoa(res.Acted))
		q.Set("failed", strconv.Itoa(res.Skipped))
		if res.More {
			q.Set("more", "1")
		}
		return "/jobs?" + q.Encode(), nil
	}
}

// deleteJob is the Delete action of a job's page; it returns to the list.
func (s *server) deleteJob(r *http.Request, a *backwave.Admin) (string, error) {
	id, err := pathID(r)
	if err != nil {
		return "", err
	}
	if _, err := a.Delete(r.Context(), id); err != nil {
		return "", err
	}
	back := url.Values{"done": {"delete"}, "ok": {"1"}, "failed": {"0"}}
	return "/jobs?" + back.Encode(), nil
}

// noticeVerb is the past participle bulkNotice says for a done= value, or
// "" for one this package never writes.
func noticeVerb(done string) string {
	for a, words := range bulkVerbs {
		if a.String() == done {
			return words[1]
		}
	}
	return ""
}

// moreNotice is what bulkNotice adds when a bulk action stopped at its
// limit.
func moreNotice(q url.Values) string {
	if q.Get("more") != "1" {
		return ""
	}
	return " More jobs match: run it again to go on."
}
