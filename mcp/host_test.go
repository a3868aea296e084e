package mcp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The Host rule is the dashboard's on every listener: a foreign Host is
// refused on a non-loopback address too, where the check used to be off
// (issue 38, hole 1), and AnyHost turns it off.
func TestHostRefusedOnAnyListener(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	strict, err := NewServer(f.store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	open, err := NewServer(f.store, Options{AnyHost: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewServer(f.store, Options{AnyHost: true, AllowedHosts: []string{"x"}}); err == nil {
		t.Error("AnyHost with AllowedHosts accepted")
	}
	for _, tc := range []struct {
		name  string
		s     *Server
		local string
		host  string
		want  int
	}{
		{"foreign Host on a public listener", strict, "192.0.2.7:8765", "evil.example", http.StatusForbidden},
		{"foreign Host on loopback", strict, "127.0.0.1:8765", "evil.example", http.StatusForbidden},
		{"localhost on a public listener", strict, "192.0.2.7:8765", "localhost:8765", http.StatusOK},
		{"any host", open, "192.0.2.7:8765", "evil.example", http.StatusOK},
	} {
		r := httptest.NewRequest(http.MethodPost, DefaultPrefix, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		r.Host = tc.host
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		addr, err := net.ResolveTCPAddr("tcp", tc.local)
		if err != nil {
			t.Fatal(err)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
		w := httptest.NewRecorder()
		tc.s.Handler().ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
	}
}
