package memstore_test

import (
	"testing"

	"github.com/backwave/backwave/store/storetest"
)

// TestDifferential runs the differential run of the Conformance Suite with
// the In-Memory Store on both sides: a check of the run itself, which must
// find no difference between two copies of the reference.
func TestDifferential(t *testing.T) {
	storetest.RunDifferential(t, harness, storetest.DifferentialOptions{})
}
