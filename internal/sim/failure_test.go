package sim

import "testing"

// TestLivelockClass (glossary, Fault Level: under Adversarial "liveness is
// not an error"): a livelock is a liveness failure only under the levels
// that demand liveness; under Adversarial it is a crash.
func TestLivelockClass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level Level
		want  Class
	}{
		{Pristine, ClassLiveness},
		{Recoverable, ClassLiveness},
		{Adversarial, ClassCrash},
	} {
		if got := tc.level.livelockClass(); got != tc.want {
			t.Errorf("livelock under %s is a %s failure, want %s", tc.level, got, tc.want)
		}
	}
}
