package postgres_test

import (
	"testing"

	"github.com/backwave/backwave/internal/graphtest"
	"github.com/backwave/backwave/store/postgres"
)

// TestClientDrainsFanOutFanIn: the 10,000-node fan-out/fan-in graph drains
// through a running Client over PostgreSQL (pgx pool, the server's clock):
// the root's success releases 10,000 jobs, the last of them releases the
// sink, and the sink reads the root's Job Output (fanWidth).
func TestClientDrainsFanOutFanIn(t *testing.T) {
	t.Parallel()
	width := fanWidth()
	s := openStore(t, modePgx, postgres.Options{})
	st := graphtest.ClientFanOutFanIn(t, s, width)
	t.Logf("width %d: %d jobs ran through a Client in %v", width, st.Jobs, st.Took)
}
