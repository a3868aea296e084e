package dashboard

import (
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/internal/hostpolicy"
	"github.com/backwave/backwave/permission"
)

// minRefreshInterval keeps an open page from reading the store in a busy
// loop.
const minRefreshInterval = 50 * time.Millisecond

// maxFormBytes bounds a POST body: the largest form is a bulk selection of
// one page of job ids.
const maxFormBytes = 1 << 20

// route is one registered route. Every route is in server.routes, so the
// tests can enumerate them: a GET needs View, a POST its Permission.
type route struct {
	method string // http.MethodGet or http.MethodPost
	path   string // the pattern below the prefix, e.g. "/jobs/{id}"
	perm   permission.Permission
	// extension names the Dashboard Extension that registered the route;
	// empty for the built-in ones.
	extension string
}

// page is what a GET handler renders: a template of the set, its title and
// its data.
type page struct {
	template string
	title    string
	data     any
	// nav is the nav entry to mark active (the path below the prefix).
	nav string
}

// pageFunc serves one GET page.
type pageFunc func(r *http.Request, c Capabilities) (page, error)

// actionFunc performs one POST Operator Action as admin and returns the
// path below the prefix to send the browser to.
type actionFunc func(r *http.Request, admin *backwave.Admin) (string, error)

// server is one mounted dashboard.
type server struct {
	store   backwave.Store
	reader  *backwave.Admin
	replica any // Options.Replica: a replicaLagger, or not
	prefix  string
	policy  permission.Policy
	hosts   *hostpolicy.Policy
	basic   *BasicAuth
	proxy   *TrustedProxy
	refresh time.Duration
	log     *slog.Logger

	mux     *http.ServeMux
	routes  []route
	pages   map[string]*template.Template
	nav     []navItem
	banners []string
	live    liveCache
	handler http.Handler
}

// navItem is one entry of the navigation bar.
type navItem struct {
	Label string
	Path  string // below the prefix
}

func newServer(st backwave.Store, opts Options) (*server, error) {
	if st == nil {
		return nil, errors.New("dashboard: no store")
	}
	prefix, err := normalizePrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	reader, err := backwave.NewAdmin(st, readerActor, backwave.WithReplica(opts.Replica))
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if opts.RefreshInterval < 0 || (opts.RefreshInterval > 0 && opts.RefreshInterval < minRefreshInterval) {
		return nil, fmt.Errorf("dashboard: RefreshInterval %s: give 0 (the default, %s) or at least %s", opts.RefreshInterval, DefaultRefreshInterval, minRefreshInterval)
	}
	s := &server{
		store: st, reader: reader, replica: opts.Replica, prefix: prefix, policy: opts.Policy,
		basic: opts.BasicAuth, proxy: opts.TrustedProxy, refresh: opts.RefreshInterval, log: opts.Logger,
		mux: http.NewServeMux(),
	}
	if s.refresh == 0 {
		s.refresh = DefaultRefreshInterval
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.hosts, err = hostpolicy.New(opts.AllowedHosts, opts.AnyHost); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if s.proxy != nil {
		if err := s.proxy.check(); err != nil {
			return nil, err
		}
	}
	if s.pages, err = parseTemplates(); err != nil {
		return nil, err
	}
	s.nav = builtinNav()
	s.registerBuiltins()
	if err := s.mountExtensions(opts.Extensions); err != nil {
		return nil, err
	}
	s.mux.Handle("GET "+s.prefix+"/static/", http.StripPrefix(s.prefix+"/static/", staticHandler()))
	if s.prefix != "" {
		s.mux.Handle("GET "+s.prefix, http.RedirectHandler(s.prefix+"/", http.StatusMovedPermanently))
		// The site's root, when it reaches this handler (mounted at "/",
		// or the root routed to it), leads to the Overview. Found, not
		// Moved Permanently: the host may serve something there later.
		s.mux.Handle("GET /{$}", http.RedirectHandler(s.prefix+"/", http.StatusFound))
	}
	s.handler = s.guard(s.mux)
	return s, nil
}

// url returns the absolute path of p below the prefix.
func (s *server) url(p string) string { return s.prefix + p }

// handle registers pattern on the mux, turning the mux's refusal of a
// malformed or conflicting pattern (a panic) into an error: an extension's
// route shape is input.
func (s *server) handle(rt route, h http.Handler) (err error) {
	pattern := rt.method + " " + s.prefix + rt.path
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("dashboard: route %s: %v", pattern, v)
		}
	}()
	s.mux.Handle(pattern, h)
	s.routes = append(s.routes, rt)
	return nil
}

// get registers a GET page gated by View.
func (s *server) get(path, extension string, fn pageFunc) error {
	rt := route{method: http.MethodGet, path: path, perm: permission.View, extension: extension}
	return s.handle(rt, s.viewGate(func(w http.ResponseWriter, r *http.Request) {
		c := s.canFor(r)
		p, err := fn(r, c)
		if err != nil {
			s.fail(w, r, c, err)
			return
		}
		s.render(w, r, http.StatusOK, p, c)
	}))
}

// getRaw registers a GET endpoint that writes its own response (the event
// stream, Tag Suggest), gated by View like every page.
func (s *server) getRaw(path string, fn http.HandlerFunc) error {
	return s.handle(route{method: http.MethodGet, path: path, perm: permission.View}, s.viewGate(fn))
}

// viewGate refuses a caller without View.
func (s *server) viewGate(fn http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.allowed(r, permission.View) {
			http.Error(w, "forbidden: the View permission is needed", http.StatusForbidden)
			return
		}
		fn(w, r)
	})
}

// post registers a POST Operator Action gated by perm, which must be one of
// the write Permissions: a write without its own gate cannot be
// registered.
func (s *server) post(path, extension string, perm permission.Permission, fn actionFunc) error {
	switch perm {
	case permission.Requeue, permission.Cancel, permission.TriggerSchedule, permission.PauseQueue, permission.Enqueue, permission.Delete:
	default:
		return fmt.Errorf("dashboard: POST %s: %v is not a write Permission", path, perm)
	}
	rt := route{method: http.MethodPost, path: path, perm: perm, extension: extension}
	return s.handle(rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.allowed(r, perm) {
			http.Error(w, "forbidden: the "+perm.String()+" permission is needed", http.StatusForbidden)
			return
		}
		ctx := permission.WithRequest(r.Context(), r)
		name, err := s.actorFor(ctx)
		if err != nil {
			http.Error(w, "forbidden: no Actor to record: "+err.Error(), http.StatusForbidden)
			return
		}
		admin, err := backwave.NewAdmin(s.store, backwave.Actor(name))
		if err != nil {
			http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		to, err := fn(r, admin)
		if err != nil {
			s.fail(w, r, s.canFor(r), err)
			return
		}
		http.Redirect(w, r, s.url(localPath(to)), http.StatusSeeOther)
	}))
}

// must panics on a built-in route's registration error: the built-in
// routes are fixed, and their Permissions come from the permission
// package's own table, so an error is a bug of this package.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// localPath keeps a redirect inside the dashboard: a clean path below the
// prefix that starts with one slash; anything else goes to the overview.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n") {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || !cleanPath(u.Path) {
		return "/"
	}
	return p
}

// cleanPath reports whether p, decoded, has no "." or ".." segment and no
// empty one: a path a browser resolves to itself, so a redirect to it
// stays where it says (a "/../" would climb out of the prefix).
func cleanPath(p string) bool {
	if p == "/" {
		return true
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p[1:], "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// backTo returns the form's "back" field when it is a dashboard page, else
// def: actions return the operator to the page they acted from.
func (s *server) backTo(r *http.Request, def string) string {
	b := r.PostForm.Get("back")
	if b == "" || !strings.HasPrefix(b, s.prefix+"/") {
		return def
	}
	if to := localPath(strings.TrimPrefix(b, s.prefix)); to != "/" || b == s.prefix+"/" {
		return to
	}
	return def
}

// httpError is an error with the status it answers.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// statusOf maps an error to the status the dashboard answers with.
func statusOf(err error) int {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.status
	case errors.Is(err, backwave.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, backwave.ErrIllegalTransition), errors.Is(err, backwave.ErrOverlap), errors.Is(err, backwave.ErrQueueNotEmpty):
		return http.StatusConflict
	case errors.Is(err, backwave.ErrInvalidParams), errors.Is(err, backwave.ErrInvalidTag):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// fail renders err as an error page; a server error is logged and shown
// without its internals.
func (s *server) fail(w http.ResponseWriter, r *http.Request, c Capabilities, err error) {
	status := statusOf(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		s.log.ErrorContext(r.Context(), "dashboard request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "the store could not answer; the error is in the server log"
	}
	s.render(w, r, status, page{template: "error", title: http.StatusText(status), data: msg}, c)
}
