package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/backwave/backwave"
)

//go:embed templates/*.html templates/pages/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// fragmentHeader asks for the live region alone: the embedded script sets
// it when an event says something changed, and swaps the region in.
const fragmentHeader = "X-Backwave-Fragment"

// layout is what every page's frame shows.
type layout struct {
	Title   string
	Prefix  string
	Nav     []navLink
	Banners []string
	Can     Capabilities
	// ReadOnly hides every control: the Policy denies all writes.
	ReadOnly bool
	// Self is the page's own path and query, the "back" of its forms.
	Self string
	Data any
}

// navLink is a nav entry as rendered.
type navLink struct {
	Label  string
	Href   string
	Active bool
}

var funcs = template.FuncMap{
	"time":      fmtTime,
	"clock":     func(t time.Time) string { return t.UTC().Format("15:04") },
	"ago":       ago,
	"iso":       func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"thousands": thousands,
	"join":      strings.Join,
	"itoa":      strconv.Itoa,
	"state":     stateLabel,
	"tagLabel":  func(t backwave.Tag) string { return t.String() },
}

// parseTemplates builds one template set per built-in page: the frame and
// the partials, plus the page's own "content".
func parseTemplates() (map[string]*template.Template, error) {
	base, err := template.New("base").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parse templates: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/pages/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: list page templates: %w", err)
	}
	out := make(map[string]*template.Template, len(names))
	for _, n := range names {
		t, err := base.Clone()
		if err != nil {
			return nil, fmt.Errorf("dashboard: clone templates: %w", err)
		}
		if _, err := t.ParseFS(templateFS, n); err != nil {
			return nil, fmt.Errorf("dashboard: parse %s: %w", n, err)
		}
		out[strings.TrimSuffix(path.Base(n), ".html")] = t
	}
	out["_base"] = base
	return out, nil
}

// render writes p inside the frame, or the live region alone when the
// request asks for a fragment.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, p page, c Capabilities) {
	t, ok := s.pages[p.template]
	if !ok {
		s.log.ErrorContext(r.Context(), "dashboard: no template", "template", p.template)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	l := layout{
		Title: p.title, Prefix: s.prefix, Banners: s.banners, Can: c,
		ReadOnly: s.policy.ReadOnly, Self: r.URL.RequestURI(), Data: p.data,
	}
	for _, n := range s.nav {
		l.Nav = append(l.Nav, navLink{Label: n.Label, Href: s.url(n.Path), Active: n.Path == p.nav})
	}
	name := "layout"
	if r.Header.Get(fragmentHeader) == "1" {
		name = "main"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, l); err != nil {
		s.log.ErrorContext(r.Context(), "dashboard: render", "template", p.template, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Vary", fragmentHeader)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// staticHandler serves the embedded script and stylesheet.
func staticHandler() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embedded tree always has the directory
	}
	return http.FileServerFS(sub)
}

// fmtTime renders an instant in UTC; the zero time as a dash.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// ago renders how long before now t was (or "in …" for the future).
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if d := time.Since(t); d >= 0 {
		return roughDuration(d) + " ago"
	} else {
		return "in " + roughDuration(-d)
	}
}

// thousands writes n with a comma between each group of three digits:
// 100000 is "100,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// stateLabel names a state for people: "dead-lettered", "awaiting parent".
func stateLabel(s backwave.JobState) string {
	switch s {
	case backwave.StateScheduled:
		return "scheduled"
	case backwave.StateAwaitingParent:
		return "awaiting parent"
	case backwave.StateRunning:
		return "running"
	case backwave.StateSucceeded:
		return "succeeded"
	case backwave.StateDeadLettered:
		return "dead-lettered"
	case backwave.StateCancelled:
		return "cancelled"
	case backwave.StateQuarantined:
		return "quarantined"
	case backwave.StateUnknown:
		return "—"
	}
	return s.String()
}
