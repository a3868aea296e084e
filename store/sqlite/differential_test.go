package sqlite_test

import (
	"testing"

	"github.com/backwave/backwave/store/sqlite"
	"github.com/backwave/backwave/store/storetest"
)

// TestDifferential replays the Conformance Suite's random call sequences on
// this adapter, its calls moving between two Stores on the same file, and on
// the In-Memory Store, and requires the same answers and final state
// (storetest.RunDifferential).
func TestDifferential(t *testing.T) {
	t.Parallel()
	storetest.RunDifferential(t, func(t *testing.T) storetest.Harness {
		h := harness(t, sqlite.Options{})
		h.Peer = peerOf(h.Store.(*sqlite.Store))
		return h
	}, storetest.DifferentialOptions{Quick: raceEnabled})
}
