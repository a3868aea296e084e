package hostpolicy

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestPolicy(t *testing.T) {
	t.Parallel()
	listed, err := New([]string{"jobs.example.com", "ops.example.com:8443", "[2001:db8::1]"}, false)
	if err != nil {
		t.Fatal(err)
	}
	anyHost, err := New(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    *Policy
		host string
		want bool
	}{
		{"zero: localhost", &Policy{}, "localhost:8080", true},
		{"zero: 127.0.0.1", &Policy{}, "127.0.0.1", true},
		{"zero: [::1]", &Policy{}, "[::1]:9", true},
		{"zero: foreign", &Policy{}, "evil.example", false},
		{"zero: empty", &Policy{}, "", false},
		{"zero: bare IPv6", &Policy{}, "::1", false},
		{"listed", listed, "JOBS.example.com:443", true},
		{"listed keeps loopback", listed, "localhost", true},
		{"listed port", listed, "ops.example.com:8443", true},
		{"listed other port", listed, "ops.example.com:443", false},
		{"listed IPv6", listed, "[2001:db8::1]:80", true},
		{"listed foreign", listed, "evil.example", false},
		{"suffix is not the name", listed, "evil.jobs.example.com", false},
		{"any", anyHost, "evil.example", true},
	} {
		if got := tc.p.Allows(tc.host); got != tc.want {
			t.Errorf("%s: Allows(%q) = %v, want %v", tc.name, tc.host, got, tc.want)
		}
	}
	for _, bad := range []string{"", "a/b", "a b", "user@host", "::1", "[::1"} {
		if _, err := New([]string{bad}, false); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	if _, err := New([]string{"x"}, true); err == nil {
		t.Error("any with a list accepted")
	}
}

func TestHandlerRefusesForeignHost(t *testing.T) {
	t.Parallel()
	h := (&Policy{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	for host, want := range map[string]int{"localhost:1": http.StatusOK, "evil.example": http.StatusForbidden} {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
	}
}
