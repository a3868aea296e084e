package storecode_test

import (
	"testing"

	"github.com/backwave/backwave/internal/storecode"
)

// roundTrip checks that every value of a table decodes back from its code
// and that no two values share one, so a stored code names one value.
func roundTrip[K comparable](t *testing.T, what string, codes map[K]int64) {
	t.Helper()
	seen := map[int64]K{}
	for v, c := range codes {
		if other, dup := seen[c]; dup {
			t.Errorf("%s: %v and %v share code %d", what, v, other, c)
		}
		seen[c] = v
		got, err := storecode.Decode(codes, what, c)
		if err != nil || got != v {
			t.Errorf("%s: Decode(%d) = %v, %v; want %v", what, c, got, err, v)
		}
	}
	if _, err := storecode.Decode(codes, what, 99); err == nil {
		t.Errorf("%s: Decode(99) succeeded; want an unknown-code error", what)
	}
}

func TestCodesRoundTrip(t *testing.T) {
	t.Parallel()
	roundTrip(t, "state", storecode.States)
	roundTrip(t, "retry cause", storecode.RetryCauses)
	roundTrip(t, "cancel cause", storecode.CancelCauses)
	roundTrip(t, "via", storecode.Vias)
}
