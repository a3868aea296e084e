//go:build unix

package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// A FIFO as the database file is refused at once: opening it would block
// until a writer came, forever (issue 38, hole 4).
func TestOpenRefusesFIFO(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "f.db")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		if err == nil {
			_ = s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrInvalidParams) || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Open of a FIFO: %v; want a refusal naming it", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open of a FIFO hangs")
	}
}
