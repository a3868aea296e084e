package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/backwave/backwave/internal/graphtest"
	"github.com/backwave/backwave/store/sqlite"
)

// TestClientDrainsFanOutFanIn: the 10,000-node fan-out/fan-in graph drains
// through a running Client — its Pump claiming, running handlers and
// reporting batches of outcomes — over a SQLite file on the host's clock:
// the root's success releases 10,000 jobs, the last of them releases the
// sink, and the sink reads the root's Job Output. Under the race detector,
// or with -short, the graph is 1,000 wide.
func TestClientDrainsFanOutFanIn(t *testing.T) {
	t.Parallel()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "jobs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	st := graphtest.ClientFanOutFanIn(t, s, fanWidth())
	t.Logf("width %d: %d jobs ran through a Client in %v", fanWidth(), st.Jobs, st.Took)
}
