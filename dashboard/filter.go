package dashboard

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/backwave/backwave"
)

// Tags travel in job-list URLs structurally, never as parsed text: a Label
// as label=<value>, a Keyed Tag as a tk=<key>&tv=<value> pair (the i-th tk
// with the i-th tv). The glossary's rule holds: a colon or an equals sign in
// a Label is ordinary data. The free-text field tagq takes a Tag's display
// form as Tag Suggest offers it ("urgent", "tenant=acme") and is resolved
// against the store's Tags: see resolveTagText.

// timeLayouts are the accepted forms of the from and to fields: what an
// <input type=datetime-local> sends (read as UTC), and RFC 3339.
var timeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339}

// listForm is a job list's filter as the URL holds it.
type listForm struct {
	States   []backwave.JobState
	Queue    string
	WireName string
	Tags     []backwave.Tag
	Retrying bool
	From     time.Time
	To       time.Time
	FromText string
	ToText   string
	Before   backwave.Cursor
	Limit    int
	// Ambiguous lists the Tags a typed tagq could mean when it matched
	// more than one; the page asks the operator to pick.
	Ambiguous []backwave.Tag
}

// parseListForm reads the job-list filter from q. A malformed field is an
// error naming it: the list is never shown under a filter other than the
// one asked for.
func (s *server) parseListForm(ctx context.Context, q url.Values) (listForm, error) {
	var f listForm
	for _, v := range q["state"] {
		if v == "" {
			continue
		}
		st, err := backwave.ParseJobState(v)
		if err != nil {
			return f, badRequest("state %q is not a job state", v)
		}
		if !slices.Contains(f.States, st) {
			f.States = append(f.States, st)
		}
	}
	f.Queue = q.Get("queue")
	f.WireName = q.Get("wire")
	switch q.Get("retrying") {
	case "", "0":
	case "1":
		f.Retrying = true
	default:
		return f, badRequest("retrying must be 1 or absent")
	}
	for _, v := range q["label"] {
		f.Tags = append(f.Tags, backwave.Label(v))
	}
	keys, vals := q["tk"], q["tv"]
	if len(keys) != len(vals) {
		return f, badRequest("every tag key (tk) needs its value (tv)")
	}
	for i := range keys {
		f.Tags = append(f.Tags, backwave.Keyed(keys[i], vals[i]))
	}
	for _, t := range f.Tags {
		if err := t.Validate(); err != nil {
			return f, badRequest("tag %q: %v", t.String(), err)
		}
	}
	if text := strings.TrimSpace(q.Get("tagq")); text != "" {
		matches, err := s.resolveTagText(ctx, text)
		if err != nil {
			return f, err
		}
		switch len(matches) {
		case 0:
			return f, badRequest("no stored Tag reads %q: pick one Tag Suggest offers", text)
		case 1:
			if !slices.Contains(f.Tags, matches[0]) {
				f.Tags = append(f.Tags, matches[0])
			}
		default:
			f.Ambiguous = matches
		}
	}
	var err error
	if f.From, f.FromText, err = parseTimeField("from", q.Get("from")); err != nil {
		return f, err
	}
	if f.To, f.ToText, err = parseTimeField("to", q.Get("to")); err != nil {
		return f, err
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return f, badRequest("before %q is not a job id", v)
		}
		f.Before = backwave.Cursor(n)
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return f, badRequest("limit %q is not a page size from 1 to 1000", v)
		}
		f.Limit = n
	}
	return f, nil
}

func parseTimeField(name, v string) (time.Time, string, error) {
	if v == "" {
		return time.Time{}, "", nil
	}
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, v, time.UTC); err == nil {
			return t, t.UTC().Format("2006-01-02T15:04"), nil
		}
	}
	return time.Time{}, "", badRequest("%s %q is not a time (YYYY-MM-DDTHH:MM, UTC)", name, v)
}

// resolveTagText finds the stored Tags whose display form is exactly text:
// usually one; two when a Label and a Keyed Tag (or two Keyed Tags split
// at different equals signs) display alike.
func (s *server) resolveTagText(ctx context.Context, text string) ([]backwave.Tag, error) {
	cands, err := s.reader.TagSuggest(ctx, text, 50)
	if err != nil {
		return nil, err
	}
	var out []backwave.Tag
	for _, t := range cands {
		if t.String() == text {
			out = append(out, t)
		}
	}
	return out, nil
}

// filter returns the Admin's filter for f.
func (f listForm) filter() backwave.JobFilter {
	return backwave.JobFilter{
		States: f.States, Queue: f.Queue, WireName: f.WireName, Tags: f.Tags,
		Retrying: f.Retrying, CreatedFrom: f.From, CreatedTo: f.To,
	}
}

// values renders f back into URL form (without the cursor).
func (f listForm) values() url.Values {
	q := url.Values{}
	for _, st := range f.States {
		q.Add("state", st.String())
	}
	if f.Queue != "" {
		q.Set("queue", f.Queue)
	}
	if f.WireName != "" {
		q.Set("wire", f.WireName)
	}
	if f.Retrying {
		q.Set("retrying", "1")
	}
	for _, t := range f.Tags {
		addTag(q, t)
	}
	if f.FromText != "" {
		q.Set("from", f.FromText)
	}
	if f.ToText != "" {
		q.Set("to", f.ToText)
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}

func addTag(q url.Values, t backwave.Tag) {
	if t.IsLabel() {
		q.Add("label", t.Value)
		return
	}
	q.Add("tk", t.Key)
	q.Add("tv", t.Value)
}

// withTag is f's URL with t added to the Tag filter.
func (f listForm) withTag(t backwave.Tag) url.Values {
	g := f
	g.Tags = append(slices.Clone(f.Tags), t)
	return g.values()
}

// withoutTag is f's URL with the i-th Tag dropped.
func (f listForm) withoutTag(i int) url.Values {
	g := f
	g.Tags = slices.Delete(slices.Clone(f.Tags), i, i+1)
	return g.values()
}

func sortStrings(s []string) { slices.Sort(s) }
