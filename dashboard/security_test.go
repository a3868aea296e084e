package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// testExtension is a Dashboard Extension with one page and one action, so
// the route checks below cover extension routes too.
func testExtension() Extension {
	return Extension{
		Name:   "probe",
		Banner: "probe extension mounted",
		Nav:    []NavEntry{{Label: "Probe", Page: ""}},
		Pages: []ExtensionPage{{
			Path: "", Title: "Probe",
			Template: `<p id="probe">{{.Data}} jobs dead-lettered</p>{{if .Can.Pause}}<form method="post" action="{{.Base}}pause-all"><button type="submit" id="probe-pause">Pause every Queue</button></form>{{end}}`,
			Load: func(ctx context.Context, req PageRequest) (any, error) {
				n, err := req.Admin.CountByState(ctx, "")
				if err != nil {
					return nil, err
				}
				return n[backwave.StateDeadLettered], nil
			},
		}},
		Actions: []ExtensionAction{{
			Path: "pause-all", Permission: permission.PauseQueue,
			Handle: func(ctx context.Context, req ActionRequest) (string, error) {
				qs, err := req.Admin.Queues(ctx)
				if err != nil {
					return "", err
				}
				for _, q := range qs {
					if err := req.Admin.PauseQueue(ctx, q.Name); err != nil {
						return "", err
					}
				}
				return "", nil
			},
		}},
	}
}

// concrete fills a route pattern's wildcards so it can be requested.
func concrete(prefix, pattern string, id backwave.JobID) string {
	p := strings.ReplaceAll(pattern, "{id}", strconv.FormatInt(int64(id), 10))
	p = strings.ReplaceAll(p, "{$}", "")
	return prefix + p
}

// gateLeaks requests every route of the servers build makes as callers
// lacking the route's Permission (holding every other one) and returns
// each route that answered anything but 403. It enumerates server.routes,
// so a route added later is checked without editing this test.
func gateLeaks(t *testing.T, build func(permission.Policy) (*server, *httptest.Server), id backwave.JobID) []string {
	t.Helper()
	var leaks []string
	probe, _ := build(allowAll())
	for _, rt := range probe.routes {
		var others []permission.Permission
		for _, p := range permission.All() {
			if p != rt.perm {
				others = append(others, p)
			}
		}
		_, ts := build(allowOnly(others...))
		path := concrete(probe.prefix, rt.path, id)
		var status int
		switch rt.method {
		case http.MethodGet:
			status, _ = get(t, ts, path)
		case http.MethodPost:
			status = post(t, ts, path, url.Values{"name": {"mail"}, "id": {strconv.FormatInt(int64(id), 10)}}).StatusCode
		default:
			leaks = append(leaks, rt.method+" "+rt.path+": unexpected method")
			continue
		}
		if status != http.StatusForbidden {
			leaks = append(leaks, fmt.Sprintf("%s %s answered %d without %v", rt.method, rt.path, status, rt.perm))
		}
	}
	return leaks
}

// TestEveryRouteIsGated: every registered route, built-in or from an
// extension, refuses a caller who holds every Permission but its own
// (glossary: Dashboard Permission). With its Permission the same request
// is not refused, so the check is not vacuous.
func TestEveryRouteIsGated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	build := func(pol permission.Policy) (*server, *httptest.Server) {
		return f.serve(Options{Policy: pol, Extensions: []Extension{testExtension()}})
	}
	if leaks := gateLeaks(t, build, ids.deadLettered); len(leaks) > 0 {
		t.Errorf("routes served without their Permission:\n%s", strings.Join(leaks, "\n"))
	}
	probe, _ := build(allowAll())
	posts := 0
	for _, rt := range probe.routes {
		if rt.method != http.MethodPost {
			continue
		}
		posts++
		_, ts := build(allowOnly(rt.perm))
		if resp := post(t, ts, concrete(probe.prefix, rt.path, ids.deadLettered), url.Values{"name": {"mail"}, "id": {strconv.FormatInt(int64(ids.deadLettered), 10)}}); resp.StatusCode == http.StatusForbidden {
			t.Errorf("POST %s refused even with %v", rt.path, rt.perm)
		}
	}
	// The three Workflow Actions are served by the Workflows extension
	// (workflow/dashboardext), whose tests check each route's gate the
	// same way.
	actions := slices.DeleteFunc(permission.Actions(), func(a permission.Action) bool {
		return a == permission.ActionCancelWorkflow || a == permission.ActionRestartWorkflow || a == permission.ActionRetryWorkflow
	})
	// + bulk requeue, cancel and delete of the selected, + the Rate Limit
	// (permission has no Action of its own for it: it is gated as the
	// Concurrency Limit, ActionSetQueueLimit), + the extension's action.
	if want := len(actions) + 3 + 1 + 1; posts != want {
		t.Errorf("%d POST routes registered, want %d: one per Operator Action", posts, want)
	}
}

// TestGateCheckBites registers a route without its gate, as a careless
// change might, and sees the enumeration above report it — and only it.
func TestGateCheckBites(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	build := func(pol permission.Policy) (*server, *httptest.Server) {
		s, ts := f.serve(Options{Policy: pol})
		s.routes = append(s.routes, route{method: http.MethodPost, path: "/oops", perm: permission.Requeue})
		s.mux.HandleFunc("POST "+s.prefix+"/oops", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
		return s, ts
	}
	leaks := gateLeaks(t, build, ids.deadLettered)
	if len(leaks) != 1 || !strings.HasPrefix(leaks[0], "POST /oops ") {
		t.Errorf("the enumeration reported %q, want exactly the ungated POST /oops", leaks)
	}
	// A write without a write Permission cannot be registered at all.
	s, _ := f.serve(Options{})
	if err := s.post("/nogate", "", 0, nil); err == nil {
		t.Error("post accepted a route gated by no Permission")
	}
	if err := s.post("/viewgate", "", permission.View, nil); err == nil {
		t.Error("post accepted a write gated by View")
	}
	_, err := newServer(f.st, Options{Extensions: []Extension{{Name: "bad", Actions: []ExtensionAction{{Path: "x", Handle: func(context.Context, ActionRequest) (string, error) { return "", nil }}}}}})
	if err == nil {
		t.Error("an extension action without a Permission was accepted")
	}
}

// TestCrossOriginPostRefused: a POST a foreign site makes the browser send
// is refused by http.CrossOriginProtection before any gate, and changes
// nothing; the same POST from the dashboard's own page goes through.
func TestCrossOriginPostRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	_, ts := f.serve(Options{Policy: allowAll()})
	path := idPath(ids.deadLettered) + "/requeue"
	for name, hdr := range map[string]map[string]string{
		"sec-fetch-site cross-site": {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		"sec-fetch-site same-site":  {"Sec-Fetch-Site": "same-site", "Origin": "http://sub.localhost"},
		"origin only":               {"Origin": "https://evil.example"},
	} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(""))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, resp.StatusCode)
		}
	}
	if j, _ := f.client.JobGet(context.Background(), ids.deadLettered); j.State != backwave.StateDeadLettered {
		t.Fatalf("a refused cross-origin POST changed the job: %s", j.State)
	}
	if resp := post(t, ts, path, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("same-origin POST: status %d, want 303", resp.StatusCode)
	}
}

// TestForeignHostRefused: the Host allow-list refuses a request naming
// another host (DNS rebinding), whatever its permissions.
func TestForeignHostRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct {
		name  string
		opts  Options
		host  string
		allow bool
	}{
		{"default localhost", Options{}, "localhost:8080", true},
		{"default 127.0.0.1", Options{}, "127.0.0.1", true},
		{"default ipv6", Options{}, "[::1]:9000", true},
		{"default foreign", Options{}, "evil.example", false},
		{"default foreign with port", Options{}, "evil.example:8080", false},
		{"default lookalike", Options{}, "localhost.evil.example", false},
		{"bare ipv6 is no Host", Options{}, "::1", false},
		{"listed", Options{AllowedHosts: []string{"jobs.example.com"}}, "jobs.example.com:443", true},
		{"listed port", Options{AllowedHosts: []string{"jobs.example.com:8443"}}, "jobs.example.com:443", false},
		{"list keeps loopback", Options{AllowedHosts: []string{"jobs.example.com"}}, "localhost", true},
		{"list refuses foreign", Options{AllowedHosts: []string{"jobs.example.com"}}, "evil.example", false},
		{"any host", Options{AnyHost: true}, "evil.example", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Policy = allowAll()
			s, _ := f.serve(tt.opts)
			req := httptest.NewRequest(http.MethodGet, "/backwave/queues", nil)
			req.Host = tt.host
			req.RemoteAddr = "127.0.0.1:5555"
			w := httptest.NewRecorder()
			s.handler.ServeHTTP(w, req)
			if got := w.Code == http.StatusOK; got != tt.allow {
				t.Errorf("Host %q: status %d, want allowed=%v", tt.host, w.Code, tt.allow)
			}
		})
	}
	if _, err := newServer(f.st, Options{AllowedHosts: []string{"jobs.example.com/x"}}); err == nil {
		t.Error("an AllowedHosts entry with a path was accepted")
	}
	if _, err := newServer(f.st, Options{AnyHost: true, AllowedHosts: []string{"x"}}); err == nil {
		t.Error("AnyHost with AllowedHosts was accepted")
	}
}

// TestDefaultPolicyIsLoopbackView: with no Policy.Allow, View is granted
// to loopback clients only and no write to anyone.
func TestDefaultPolicyIsLoopbackView(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	s, _ := f.serve(Options{})
	tests := []struct {
		method, remote string
		want           int
	}{
		{http.MethodGet, "127.0.0.1:4000", http.StatusOK},
		{http.MethodGet, "[::1]:4000", http.StatusOK},
		{http.MethodGet, "192.0.2.7:4000", http.StatusForbidden},
		{http.MethodGet, "[::ffff:192.0.2.7]:4000", http.StatusForbidden},
		{http.MethodPost, "127.0.0.1:4000", http.StatusForbidden},
	}
	for _, tt := range tests {
		path := idPath(ids.deadLettered)
		if tt.method == http.MethodPost {
			path += "/requeue"
		}
		req := httptest.NewRequest(tt.method, path, nil)
		req.Host = "localhost"
		req.RemoteAddr = tt.remote
		w := httptest.NewRecorder()
		s.handler.ServeHTTP(w, req)
		if w.Code != tt.want {
			t.Errorf("%s from %s: %d, want %d", tt.method, tt.remote, w.Code, tt.want)
		}
		if tt.want == http.StatusOK && strings.Contains(w.Body.String(), secretDetail) {
			t.Errorf("the default policy showed Failure Detail")
		}
	}
}

// TestSensitiveDataNeverSent: without ViewSensitiveData no response of any
// GET route — whole pages, live fragments, Tag Suggest, the event stream's
// first event — carries a payload, a Failure Detail or a Job Output. With
// it the job pages do, so the markers are really there to find.
func TestSensitiveDataNeverSent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	noSensitive := allowOnly(permission.View, permission.Requeue, permission.Cancel, permission.TriggerSchedule, permission.PauseQueue)
	s, ts := f.serve(Options{Policy: noSensitive, Extensions: []Extension{testExtension()}})
	markers := []string{secretPayload, secretDetail, secretOutput, secretCursor}
	jobs := []backwave.JobID{ids.succeeded, ids.deadLettered, ids.quarantined, ids.waiting, ids.parent, ids.child}
	var paths []string
	detail := map[string]bool{}
	for _, rt := range s.routes {
		if rt.method != http.MethodGet || rt.path == "/events" {
			continue
		}
		if strings.Contains(rt.path, "{id}") {
			for _, id := range jobs {
				paths = append(paths, concrete(s.prefix, rt.path, id))
				detail[concrete(s.prefix, rt.path, id)] = true
			}
			continue
		}
		paths = append(paths, concrete(s.prefix, rt.path, 0))
	}
	paths = append(paths, "/backwave/tags/suggest?prefix=", "/backwave/jobs?state=dead_lettered", "/backwave/jobs?tk=tenant&tv=acme")
	for _, path := range paths {
		for _, fragment := range []bool{false, true} {
			req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
			if fragment {
				req.Header.Set(fragmentHeader, "1")
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d", path, resp.StatusCode)
			}
			for _, m := range markers {
				if strings.Contains(string(b), m) {
					t.Errorf("GET %s (fragment %v) sent %q without ViewSensitiveData", path, fragment, m)
				}
			}
			if detail[path] && !strings.Contains(string(b), "hidden: needs the ViewSensitiveData permission") {
				t.Errorf("GET %s does not say the content is hidden", path)
			}
			if detail[path] && !strings.Contains(string(b), "restart with <code>--allow ViewSensitiveData</code>") {
				t.Errorf("GET %s does not say how to see the hidden content", path)
			}
		}
	}
	// The event stream's first event carries no data either.
	resp, err := ts.Client().Get(ts.URL + "/backwave/events")
	if err != nil {
		t.Fatal(err)
	}
	line := ""
	sc := bufio.NewScanner(resp.Body)
	for i := 0; i < 3 && sc.Scan(); i++ {
		line += sc.Text() + "\n"
	}
	resp.Body.Close()
	if !strings.Contains(line, "event: ready") {
		t.Errorf("event stream began with %q", line)
	}

	_, full := f.serve(Options{Policy: allowAll()})
	_, body := get(t, full, idPath(ids.succeeded))
	_, dl := get(t, full, idPath(ids.deadLettered))
	for _, m := range markers {
		if !strings.Contains(body+dl, m) {
			t.Errorf("with ViewSensitiveData the job pages lack %q: the check above proves nothing", m)
		}
	}
}

// TestResponseHeaders: every response carries a strict
// Content-Security-Policy without 'unsafe-inline', and GET never runs an
// action: an action's path answers 405 to GET.
func TestResponseHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	s, ts := f.serve(Options{Policy: allowAll()})
	for _, path := range []string{"/backwave/", "/backwave/static/app.js", "/backwave/jobs/999", "/backwave/nothing"} {
		resp, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if csp != contentSecurityPolicy || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: framing or sniffing headers missing", path)
		}
	}
	for _, rt := range s.routes {
		if rt.method != http.MethodPost {
			continue
		}
		if status, _ := get(t, ts, concrete(s.prefix, rt.path, ids.deadLettered)); status != http.StatusMethodNotAllowed {
			t.Errorf("GET on POST route %s: %d, want 405", rt.path, status)
		}
	}
	if j, _ := f.client.JobGet(context.Background(), ids.deadLettered); j.State != backwave.StateDeadLettered {
		t.Errorf("a GET changed a job: %s", j.State)
	}
}

// TestRedirectStaysLocal: the "back" field of an action cannot send the
// browser off the dashboard.
func TestRedirectStaysLocal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(t, f)
	_, ts := f.serve(Options{Policy: allowAll()})
	for _, back := range []string{"https://evil.example/", "//evil.example/x", "/backwave//evil.example", "/elsewhere", "/backwave/\\evil"} {
		resp := post(t, ts, "/backwave/queues/pause", url.Values{"name": {"mail"}, "back": {back}})
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/backwave/") || strings.HasPrefix(loc, "//") || strings.Contains(loc, "evil") {
			t.Errorf("back %q redirected to %q", back, loc)
		}
	}
}
