package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// TestSynchronousDefault: the glossary's Storage Adapter "must be durable",
// so a store opened without a choice syncs every commit (FULL); NORMAL is
// there only when asked for, by Options or by the URI.
func TestSynchronousDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const normal, full = 1, 2
	for _, tc := range []struct {
		name string
		open func(path string) (store.Store, error)
		want int
	}{
		{"Options default", func(p string) (store.Store, error) { return sqlite.Open(ctx, p, sqlite.Options{}) }, full},
		{"Options normal", func(p string) (store.Store, error) {
			return sqlite.Open(ctx, p, sqlite.Options{Synchronous: sqlite.SynchronousNormal})
		}, normal},
		{"Options full", func(p string) (store.Store, error) {
			return sqlite.Open(ctx, p, sqlite.Options{Synchronous: sqlite.SynchronousFull})
		}, full},
		{"URI default", func(p string) (store.Store, error) { return store.Open(ctx, "sqlite://"+p) }, full},
		{"URI normal", func(p string) (store.Store, error) { return store.Open(ctx, "sqlite://"+p+"?synchronous=normal") }, normal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := tc.open(filepath.Join(t.TempDir(), "jobs.db"))
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer func() { _ = s.Close() }()
			w, r, err := sqlite.SyncLevel(ctx, s.(*sqlite.Store))
			if err != nil {
				t.Fatalf("read PRAGMA synchronous: %v", err)
			}
			if w != tc.want || r != tc.want {
				t.Fatalf("PRAGMA synchronous = %d (write), %d (read), want %d", w, r, tc.want)
			}
		})
	}
}
