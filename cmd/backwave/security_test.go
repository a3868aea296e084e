package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/sqlite"
)

// serving is one `backwave dashboard` run in-process.
type serving struct {
	base string // http://127.0.0.1:PORT
	done chan int
}

// startDashboard runs `backwave dashboard` with args until the test ends
// and returns where it listens.
func startDashboard(t *testing.T, args ...string) serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := serving{done: make(chan int, 1)}
	go func() {
		code := run(ctx, append([]string{"backwave", "dashboard"}, args...), strings.NewReader(""), pw, io.Discard)
		_ = pw.Close()
		s.done <- code
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("the dashboard did not stop")
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err != nil {
		t.Fatalf("the dashboard printed no address: %v", err)
	}
	// "dashboard: http://127.0.0.1:PORT/backwave/ (…)"
	u := strings.Fields(line)[1]
	s.base = strings.TrimSuffix(u, "/backwave/")
	return s
}

func migrated(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "j.db")
	ok(t, "migrate", "--db", db)
	return db
}

// Every path the dashboard command serves, /metrics too, refuses a foreign
// Host, in a Host header and in an absolute-form request line (issue 38,
// hole 1).
func TestDashboardCommandHostPolicy(t *testing.T) {
	t.Parallel()
	s := startDashboard(t, "--db", migrated(t), "--addr", "127.0.0.1:0")
	for _, tc := range []struct {
		path, host string
		want       int
	}{
		{"/metrics", "", http.StatusOK},
		{"/metrics", "evil.example", http.StatusForbidden},
		{"/metrics", "evil.example:80", http.StatusForbidden},
		{"/backwave/", "evil.example", http.StatusForbidden},
		{"/nothing", "evil.example", http.StatusForbidden},
		{"/backwave/", "localhost", http.StatusOK},
	} {
		req, err := http.NewRequest(http.MethodGet, s.base+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s Host %q: %d, want %d", tc.path, tc.host, resp.StatusCode, tc.want)
		}
	}
	// An absolute-form request line names the host in the URL.
	c, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET http://evil.example/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(status, " 403 ") {
		t.Errorf("absolute-form GET http://evil.example/metrics: %q %v, want 403", status, err)
	}
}

func passwordFile(t *testing.T, user, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "passwords")
	if err := os.WriteFile(p, []byte(user+":"+string(h)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A non-loopback --addr is refused unless callers are authenticated
// (issue 38, hole 2).
func TestDashboardCommandNonLoopbackNeedsAuthentication(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.0.2.1:0", "example.com:0"} {
		r := runCLI(t, "dashboard", "--db", db, "--addr", addr, "--allow", "Requeue,Cancel")
		if r.code == 0 || !strings.Contains(r.stderr, "not a loopback address") || !strings.Contains(r.stderr, "--password-file") {
			t.Errorf("--addr %s: exit %d, stderr %q; want a refusal naming the ways off loopback", addr, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{
		{"--proxy-header", "X-User"},
		{"--trusted-proxy", "not-an-address", "--addr", "0.0.0.0:0"},
		{"--password-file", filepath.Join(t.TempDir(), "none"), "--addr", "0.0.0.0:0"},
		{"--password-file", passwordFile(t, "alice", "pw"), "--actor", "ops"},
	} {
		if r := runCLI(t, append([]string{"dashboard", "--db", db}, args...)...); r.code == 0 {
			t.Errorf("dashboard %q: exit 0", args)
		}
	}
	// With a password file the all-interfaces address is served.
	s := startDashboard(t, "--db", db, "--addr", "0.0.0.0:0", "--password-file", passwordFile(t, "alice", "pw"))
	port := s.base[strings.LastIndexByte(s.base, ':')+1:]
	resp, err := http.Get("http://127.0.0.1:" + port + "/backwave/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no credentials on 0.0.0.0: %d, want 401", resp.StatusCode)
	}
}

// Writes through the command's password file are audited as the user.
func TestDashboardCommandAuditsSignedInUser(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	id := strings.TrimSpace(ok(t, "enqueue", "--db", db, "--wire-name", "x", "--queue", "q", "--delay", "1h", "-q"))
	s := startDashboard(t, "--db", db, "--addr", "127.0.0.1:0", "--password-file", passwordFile(t, "alice", "pw"), "--allow", "Cancel")
	post := func(user, password string) int {
		req, err := http.NewRequest(http.MethodPost, s.base+"/backwave/jobs/"+id+"/cancel", strings.NewReader(url.Values{}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		c := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("", ""); code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d", code)
	}
	if code := post("alice", "guess"); code != http.StatusUnauthorized {
		t.Errorf("wrong password: %d", code)
	}
	if code := post("alice", "pw"); code != http.StatusSeeOther {
		t.Fatalf("alice: %d", code)
	}
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := backwave.NewAdmin(st, "test")
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Audit(context.Background(), backwave.AuditListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 || p.Items[0].Actor != "alice" {
		t.Errorf("audit: %+v, want one entry by alice", p.Items)
	}
}

// A FIFO as the SQLite file is refused at once by every command that
// opens it (issue 38, hole 4).
func TestFIFODatabaseRefused(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "f.db")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, args := range [][]string{
		{"jobs", "list", "--db", fifo},
		{"migrate", "--db", fifo},
		{"dashboard", "--db", fifo, "--addr", "127.0.0.1:0"},
		{"enqueue", "--db", fifo, "--wire-name", "x"},
	} {
		done := make(chan result, 1)
		go func() { done <- runCLI(t, args...) }()
		select {
		case r := <-done:
			if r.code == 0 || !strings.Contains(r.stderr, "not a regular file") {
				t.Errorf("%q: exit %d, stderr %q; want a refusal", args, r.code, r.stderr)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%q hangs on a FIFO", args)
		}
	}
}

// A malformed $BACKWAVE_KEYS is refused before any store is opened: the
// enqueue that would create the store creates nothing (issue 38, hole 5).
func TestMalformedKeysCreateNothing(t *testing.T) {
	dir := t.TempDir()
	for i, keys := range []string{"garbage", "k1=", "k1=AAAA", "=", ",", strings.Repeat("k", 5000) + "=AAAA"} {
		t.Setenv("BACKWAVE_KEYS", keys)
		db := filepath.Join(dir, "new"+string(rune('a'+i))+".db")
		for _, args := range [][]string{
			{"enqueue", "--db", db, "--wire-name", "x"},
			{"migrate", "--db", db},
		} {
			r := runCLI(t, args...)
			if r.code == 0 || !strings.Contains(r.stderr, "BACKWAVE_KEYS") || len(r.stderr) > 400 {
				t.Errorf("keys %.20q, %s: exit %d, stderr %q", keys, args[0], r.code, r.stderr)
			}
			if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("keys %.20q, %s: the store was created (%v)", keys, args[0], err)
			}
		}
	}
}

// An invalid UTF-8 payload is refused by the CLI, and jobs show --json
// prints valid JSON even for a payload stored before the rule (issue 38,
// hole 8).
func TestInvalidUTF8Payload(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	r := runCLI(t, "enqueue", "--db", db, "--wire-name", "x", "--payload", "{\"a\":\"\xff\"}")
	if r.code == 0 || !strings.Contains(r.stderr, "UTF-8") {
		t.Errorf("an invalid UTF-8 payload: exit %d, stderr %q", r.code, r.stderr)
	}
	id := strings.TrimSpace(ok(t, "enqueue", "--db", db, "--wire-name", "x", "--payload", `{"a":"b"}`, "-q"))
	// Plant a payload an older build could have stored.
	c, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(`UPDATE backwave_job_payload SET payload = ? WHERE job_id = ?`, []byte("{\"a\":\"\xff\"}"), id)
	if err != nil {
		t.Fatalf("plant the payload: %v", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("plant the payload: %d rows, %v", n, err)
	}
	_ = c.Close()
	out := ok(t, "jobs", "show", "--db", db, "--json", id)
	if !utf8.ValidString(out) || !json.Valid([]byte(out)) {
		t.Errorf("jobs show --json printed invalid JSON: %q", out)
	}
}
