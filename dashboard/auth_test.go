package dashboard

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// hash is a bcrypt hash of password at MinBcryptCost.
func hash(t *testing.T, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), MinBcryptCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// grantAllNoActor grants every Permission and names no Actor: the
// authenticated user is the Actor.
func grantAllNoActor() permission.Policy {
	return permission.Policy{Allow: func(context.Context, permission.Permission) bool { return true }}
}

// do serves one request through s's whole handler from remote.
func do(s *server, method, path, remote string, form url.Values, edit func(*http.Request)) *httptest.ResponseRecorder {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, path, body)
	r.Host = "localhost:8080"
	r.RemoteAddr = remote
	if method == http.MethodPost {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", "http://localhost:8080")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	if edit != nil {
		edit(r)
	}
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, r)
	return w
}

// auditActors lists the Actors of the audit trail, newest first.
func (f *fixture) auditActors() []backwave.Actor {
	f.t.Helper()
	p, err := f.admin.Audit(context.Background(), backwave.AuditListParams{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []backwave.Actor
	for _, e := range p.Items {
		out = append(out, e.Actor)
	}
	return out
}

func TestBasicAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	waiting := f.enqueue(anyJob{W: "test.none", Data: "x"}, backwave.WithQueue("elsewhere"))
	auth, err := NewBasicAuth(map[string]string{"alice": hash(t, "s3cret"), "bob": hash(t, "hunter2")})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	s, _ := f.serve(Options{Policy: grantAllNoActor(), BasicAuth: auth, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	remote := "203.0.113.9:4000" // not loopback: only the sign-in admits it
	cancel := idPath(waiting) + "/cancel"

	// No credentials: refused, asked to sign in, nothing audited.
	w := do(s, http.MethodGet, "/backwave/", remote, nil, nil)
	if w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") {
		t.Errorf("no credentials: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}
	if w := do(s, http.MethodPost, cancel, remote, url.Values{}, nil); w.Code != http.StatusUnauthorized {
		t.Errorf("no credentials, POST: %d", w.Code)
	}

	// A wrong password and an unknown user: refused, slowed, logged.
	for _, cred := range [][2]string{{"alice", "wrong"}, {"mallory", "s3cret"}, {"alice", ""}} {
		start := time.Now()
		w := do(s, http.MethodPost, cancel, remote, url.Values{}, func(r *http.Request) { r.SetBasicAuth(cred[0], cred[1]) })
		took := time.Since(start)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("user %q password %q: %d, want 401", cred[0], cred[1], w.Code)
		}
		// One bcrypt comparison at cost 10 takes tens of milliseconds; the
		// bound is far below it so a loaded machine cannot flake.
		if took < 5*time.Millisecond {
			t.Errorf("user %q: refused in %v: a guess is not slowed by bcrypt", cred[0], took)
		}
		if !strings.Contains(logs.String(), `user="\"`+cred[0]) {
			t.Errorf("user %q: the refusal is not logged:\n%s", cred[0], logs.String())
		}
	}
	if got := f.auditActors(); len(got) != 0 {
		t.Fatalf("refused requests audited %v", got)
	}
	if j, _ := f.client.JobGet(context.Background(), waiting); j.State == backwave.StateCancelled {
		t.Fatal("a refused request cancelled the job")
	}

	// The right password: View from any address, writes audited as the user.
	if w := do(s, http.MethodGet, "/backwave/jobs", remote, nil, func(r *http.Request) { r.SetBasicAuth("alice", "s3cret") }); w.Code != http.StatusOK {
		t.Errorf("alice's GET: %d", w.Code)
	}
	w = do(s, http.MethodPost, cancel, remote, url.Values{}, func(r *http.Request) { r.SetBasicAuth("alice", "s3cret") })
	if w.Code != http.StatusSeeOther {
		t.Fatalf("alice's cancel: %d %s", w.Code, w.Body)
	}
	if got := f.auditActors(); len(got) != 1 || got[0] != "alice" {
		t.Errorf("audit after alice's cancel: %v, want [alice]", got)
	}
}

func TestTrustedProxy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	waiting := f.enqueue(anyJob{W: "test.none", Data: "x"}, backwave.WithQueue("elsewhere"))
	var logs syncBuffer
	s, _ := f.serve(Options{
		Policy:       grantAllNoActor(),
		TrustedProxy: &TrustedProxy{Header: "X-Forwarded-User", Proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/30")}},
		Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
	})
	cancel := idPath(waiting) + "/cancel"
	as := func(user string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("X-Forwarded-User", user) }
	}
	for _, tc := range []struct {
		name, remote string
		edit         func(*http.Request)
		want         int
		log          string
	}{
		{"forged header from a client", "203.0.113.9:4000", as("carol"), http.StatusForbidden, "forged"},
		{"forged header from loopback", "127.0.0.1:4000", as("carol"), http.StatusForbidden, "forged"},
		{"client without the proxy", "203.0.113.9:4000", nil, http.StatusForbidden, "did not come through"},
		{"proxy naming no user", "10.0.0.1:4000", nil, http.StatusForbidden, "without its user header"},
		{"proxy naming a bad user", "10.0.0.1:4000", as("ca\x01rol"), http.StatusForbidden, "not one valid name"},
		{"proxy naming two users", "10.0.0.1:4000", func(r *http.Request) {
			r.Header.Add("X-Forwarded-User", "carol")
			r.Header.Add("X-Forwarded-User", "root")
		}, http.StatusForbidden, "not one valid name"},
	} {
		w := do(s, http.MethodPost, cancel, tc.remote, url.Values{}, tc.edit)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
		if !strings.Contains(logs.String(), tc.log) {
			t.Errorf("%s: no %q in the log:\n%s", tc.name, tc.log, logs.String())
		}
	}
	if got := f.auditActors(); len(got) != 0 {
		t.Fatalf("refused requests audited %v", got)
	}
	if w := do(s, http.MethodGet, "/backwave/jobs", "10.0.0.2:4000", nil, as("carol")); w.Code != http.StatusOK {
		t.Errorf("carol's GET through the proxy: %d", w.Code)
	}
	if w := do(s, http.MethodPost, cancel, "[::ffff:10.0.0.1]:4000", url.Values{}, as("carol")); w.Code != http.StatusSeeOther {
		t.Fatalf("carol's cancel through the proxy: %d %s", w.Code, w.Body)
	}
	if got := f.auditActors(); len(got) != 1 || got[0] != "carol" {
		t.Errorf("audit after carol's cancel: %v, want [carol]", got)
	}
}

// With both modes, the proxy's header names the user and a client that
// does not come through the proxy signs in.
func TestTrustedProxyWithBasicAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	auth, err := NewBasicAuth(map[string]string{"alice": hash(t, "s3cret")})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := f.serve(Options{
		BasicAuth:    auth,
		TrustedProxy: &TrustedProxy{Header: "X-Forwarded-User", Proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}},
	})
	for _, tc := range []struct {
		name, remote string
		edit         func(*http.Request)
		want         int
	}{
		{"proxy", "10.0.0.1:1", func(r *http.Request) { r.Header.Set("X-Forwarded-User", "carol") }, http.StatusOK},
		{"proxy without header asks to sign in", "10.0.0.1:1", nil, http.StatusUnauthorized},
		{"client signs in", "203.0.113.9:1", func(r *http.Request) { r.SetBasicAuth("alice", "s3cret") }, http.StatusOK},
		{"client forges the header", "203.0.113.9:1", func(r *http.Request) {
			r.SetBasicAuth("alice", "s3cret")
			r.Header.Set("X-Forwarded-User", "root")
		}, http.StatusForbidden},
	} {
		if w := do(s, http.MethodGet, "/backwave/", tc.remote, nil, tc.edit); w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
	}
}

func TestAuthOptionsChecked(t *testing.T) {
	t.Parallel()
	cheap, err := bcrypt.GenerateFromPassword([]byte("x"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	good := hash(t, "x")
	for name, users := range map[string]map[string]string{
		"no users":        {},
		"cheap hash":      {"alice": string(cheap)},
		"not bcrypt":      {"alice": "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="},
		"colon in name":   {"al:ice": good},
		"control in name": {"al\nice": good},
	} {
		if _, err := NewBasicAuth(users); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	f := newFixture(t)
	for name, tp := range map[string]*TrustedProxy{
		"no header":  {Proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}},
		"no proxies": {Header: "X-Forwarded-User"},
	} {
		if _, err := newServer(f.st, Options{TrustedProxy: tp}); err == nil {
			t.Errorf("TrustedProxy with %s: accepted", name)
		}
	}
}

func TestLoadPasswordFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := hash(t, "pw")
	a, err := LoadPasswordFile(write("ok", "# operators\n\nalice:"+good+"\nbob:"+strings.Replace(good, "$2a$", "$2y$", 1)+"\n"))
	if err != nil {
		t.Fatalf("a valid file: %v", err)
	}
	if !a.check(context.Background(), "bob", "pw") || a.check(context.Background(), "alice", "nope") {
		t.Error("the loaded hashes do not check as written")
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"missing":   filepath.Join(dir, "none"),
		"directory": dir,
		"fifo":      fifo,
		"no colon":  write("nocolon", "alice "+good+"\n"),
		"twice":     write("twice", "alice:"+good+"\nalice:"+good+"\n"),
		"empty":     write("empty", "# nobody\n"),
	} {
		if _, err := LoadPasswordFile(path); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A form's back field cannot climb out of the prefix (issue 38, hole 9).
func TestRedirectStaysUnderPrefix(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := f.admin.SetQueueLimit(t.Context(), servedQueue, 0); err != nil { // the Queue becomes known
		t.Fatal(err)
	}
	_, ts := f.serve(Options{Policy: allowAll()})
	for _, back := range []string{
		"/backwave/../../evil",
		"/backwave/%2e%2e/evil",
		"/backwave/./../evil",
		"/backwave//evil.example/x",
		"/backwave/queues/../../../evil?x=1",
	} {
		resp := post(t, ts, "/backwave/queues/pause", url.Values{"name": {servedQueue}, "back": {back}})
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/backwave/") || strings.Contains(loc, "..") || strings.Contains(loc, "evil") {
			t.Errorf("back=%q: %d Location %q, want a redirect under /backwave/", back, resp.StatusCode, loc)
		}
	}
	resp := post(t, ts, "/backwave/queues/pause", url.Values{"name": {servedQueue}, "back": {"/backwave/jobs?state=scheduled"}})
	if loc := resp.Header.Get("Location"); loc != "/backwave/jobs?state=scheduled" {
		t.Errorf("a clean back: Location %q", loc)
	}
}

// With nothing to submit, /jobs renders no bulk form and no selection
// checkboxes.
func TestNoBulkFormWithoutWrites(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(anyJob{W: "test.none", Data: "x"}, backwave.WithQueue("elsewhere"))
	ro := allowAll()
	ro.ReadOnly = true
	for _, tc := range []struct {
		name string
		pol  permission.Policy
		want bool
	}{
		{"view only", permission.Policy{}, false},
		{"read-only", ro, false},
		{"sensitive only", allowOnly(permission.View, permission.ViewSensitiveData), false},
		{"pause only", allowOnly(permission.View, permission.PauseQueue), false},
		{"cancel", allowOnly(permission.View, permission.Cancel), true},
		{"all", allowAll(), true},
	} {
		_, ts := f.serve(Options{Policy: tc.pol})
		code, body := get(t, ts, "/backwave/jobs")
		if code != http.StatusOK {
			t.Fatalf("%s: GET /jobs: %d", tc.name, code)
		}
		form, boxes := strings.Contains(body, `id="bulk"`), strings.Contains(body, `name="id"`)
		if form != tc.want || boxes != tc.want {
			t.Errorf("%s: bulk form %v, checkboxes %v; want %v", tc.name, form, boxes, tc.want)
		}
	}
}
