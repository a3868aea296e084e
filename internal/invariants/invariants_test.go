package invariants_test

import (
	"strings"
	"testing"

	"github.com/backwave/backwave/internal/invariants"
)

func TestFailfPanicsWithTheMessage(t *testing.T) {
	t.Parallel()
	defer func() {
		r := recover()
		s, ok := r.(string)
		if !ok || !strings.Contains(s, "broken invariant: op 7 not in flight") {
			t.Fatalf("recovered %v, want the broken-invariant message", r)
		}
	}()
	invariants.Failf("op %d not in flight", 7)
	t.Fatal("Failf returned")
}
