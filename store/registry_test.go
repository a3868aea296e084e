package store_test

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	_ "github.com/backwave/backwave/store/postgres"
	_ "github.com/backwave/backwave/store/sqlite"
)

// A failed Open returns a nil Store: a nil interface, so `if s != nil`
// and a deferred Close behave, whichever adapter failed and at which step.
func TestOpenFailureIsNilStore(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-dir", "jobs.db")
	for _, tc := range []struct{ name, uri string }{
		{"no scheme", "/var/lib/jobs.db"},
		{"unknown scheme", "redis://localhost"},
		{"bad URI", "sqlite://%zz"},
		{"mem with a path", "mem://shared"},
		{"sqlite bad parameter", "sqlite://" + missing + "?synchronous=sometimes"},
		{"sqlite missing directory", "sqlite://" + missing},
		{"postgres bad schema", "postgres://postgres@127.0.0.1:1/test?schema=Bad-Name"},
		{"postgres unreachable", "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := store.Open(context.Background(), tc.uri)
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open(%q) succeeded", tc.uri)
			}
			if s != nil {
				t.Fatalf("Open(%q) = %T (%v), want a nil Store with its error", tc.uri, s, err)
			}
		})
	}
}

// A Registry hands back a nil Store whatever its opener put in the
// interface beside an error.
func TestRegistryNilsFailedOpener(t *testing.T) {
	t.Parallel()
	var r store.Registry
	boom := errors.New("boom")
	r.Register("typed", func(context.Context, *url.URL) (store.Store, error) {
		var s *memstore.Store
		return s, boom
	})
	s, err := r.Open(context.Background(), "typed://x")
	if !errors.Is(err, boom) || s != nil {
		t.Fatalf("Open = %T, %v; want nil, boom", s, err)
	}
}
