package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const userHeader = "X-Test-User"

// asUser sends every request with the user header the host's Policy
// reads; the user can change between requests of one session.
type asUser struct {
	user atomic.Pointer[string]
}

func (u *asUser) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if name := u.user.Load(); name != nil && *name != "" {
		r.Header.Set(userHeader, *name)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (u *asUser) set(name string) { u.user.Store(&name) }

// hostPolicy is a host's Policy that authorizes from the request itself,
// as a real host reads its session: it fails the test if a callback runs
// without the request attached.
func hostPolicy(t *testing.T) permission.Policy {
	grants := map[string][]permission.Permission{
		"ada": permission.All(),
		"bob": {permission.View, permission.Requeue},
	}
	user := func(ctx context.Context) (string, bool) {
		r := permission.Request(ctx)
		if r == nil {
			t.Error("a Policy callback ran without the *http.Request")
			return "", false
		}
		u := r.Header.Get(userHeader)
		return u, u != ""
	}
	return permission.Policy{
		Allow: func(ctx context.Context, p permission.Permission) bool {
			u, ok := user(ctx)
			if !ok {
				return p == permission.View
			}
			return slices.Contains(grants[u], p)
		},
		ResolveActor: func(ctx context.Context) (string, error) {
			u, ok := user(ctx)
			if !ok {
				return "", errors.New("anonymous caller")
			}
			return "http:" + u, nil
		},
	}
}

func serveHTTP(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(s.Prefix(), s.Handler())
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func connectHTTP(t *testing.T, endpoint string, u *asUser) *sdk.ClientSession {
	t.Helper()
	transport := &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: u}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "mcptest", Version: "v0"}, nil).Connect(context.Background(), transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestHTTPToolListPerCaller(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.server(t, hostPolicy(t))
	ts := serveHTTP(t, s)
	reads := wantTools[:17]
	for _, tc := range []struct {
		user string
		want []string
	}{
		{"", reads},
		{"bob", slices.Concat(reads, []string{"job_requeue", "job_reschedule", "workflow_restart", "workflow_retry", "job_requeue_matching"})},
		{"ada", wantTools},
	} {
		t.Run("user "+tc.user, func(t *testing.T) {
			t.Parallel()
			u := &asUser{}
			u.set(tc.user)
			got := toolNames(t, connectHTTP(t, ts.URL+s.Prefix(), u))
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("tools %v\nwant %v", got, want)
			}
		})
	}
}

// Over HTTP each request is authorized on its own: a denied write is
// refused and not audited; an allowed one is audited with the Actor the
// host resolved from that request.
func TestHTTPWrites(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.server(t, hostPolicy(t))
	ts := serveHTTP(t, s)
	u := &asUser{}
	u.set("bob")
	cs := connectHTTP(t, ts.URL+s.Prefix(), u)

	// bob may requeue but not cancel.
	before := len(f.audit(t))
	if r := call(t, cs, "job_cancel", map[string]any{"id": f.waiting[0]}); !r.isError {
		t.Errorf("bob cancelled: %s", r.structured)
	}
	if got := f.job(t, f.waiting[0]).State; got != backwave.StateScheduled {
		t.Errorf("after the refused cancel the job is %s", got)
	}
	// The same session, now without a user: the requeue is refused.
	u.set("")
	if r := call(t, cs, "job_requeue", map[string]any{"id": f.dead}); !r.isError {
		t.Errorf("an anonymous caller requeued: %s", r.structured)
	}
	if after := len(f.audit(t)); after != before {
		t.Errorf("refused writes wrote %d audit records", after-before)
	}
	if got := f.job(t, f.dead).State; got != backwave.StateDeadLettered {
		t.Errorf("after the refused requeue the job is %s", got)
	}

	u.set("bob")
	res := mustCall[jobActionResult](t, cs, "job_requeue", map[string]any{"id": f.dead})
	if res.Actor != "http:bob" || res.Job.State != "scheduled" {
		t.Errorf("bob's requeue: %+v", res)
	}
	entries := f.audit(t)
	if len(entries) != before+1 || entries[0].Action != backwave.AuditRequeue || entries[0].Actor != "http:bob" || entries[0].JobID != f.dead {
		t.Errorf("audit after bob's requeue: %+v", entries)
	}

	u.set("ada")
	q := mustCall[queueActionResult](t, cs, "queue_pause", map[string]any{"queue": mailQueue})
	if q.Actor != "http:ada" || f.audit(t)[0].Actor != "http:ada" {
		t.Errorf("ada's queue_pause: %+v", q)
	}
}

func TestHTTPHandlerBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s, err := NewServer(f.store, Options{Prefix: "/ops/mcp", AllowedHosts: []string{"jobs.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/", s.Handler())
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	if got := toolNames(t, connectHTTP(t, ts.URL+"/ops/mcp", &asUser{})); len(got) != 17 {
		t.Errorf("tools at the prefix: %v", got)
	}
	for _, tc := range []struct {
		name   string
		path   string
		host   string
		header http.Header
		want   int
	}{
		{"the prefix", "/ops/mcp", "", nil, http.StatusOK},
		{"the prefix and a slash", "/ops/mcp/", "", nil, http.StatusOK},
		{"another path", "/ops/other", "", nil, http.StatusNotFound},
		{"below the prefix", "/ops/mcp/x", "", nil, http.StatusNotFound},
		{"cross-origin browser request", "/ops/mcp", "", http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"foreign Host on loopback (DNS rebinding)", "/ops/mcp", "evil.example", nil, http.StatusForbidden},
		{"foreign Host with a port", "/ops/mcp", "evil.example:80", nil, http.StatusForbidden},
		{"allowed Host", "/ops/mcp", "jobs.example.com", nil, http.StatusOK},
		{"allowed Host with a port", "/ops/mcp", "JOBS.example.com:8443", nil, http.StatusOK},
		{"localhost", "/ops/mcp", "localhost:1234", nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodPost, ts.URL+tc.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			if err != nil {
				t.Fatal(err)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("POST %s: %s, want %d", tc.path, resp.Status, tc.want)
			}
		})
	}
}
