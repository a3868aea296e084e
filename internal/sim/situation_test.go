package sim

import "testing"

// TestSituationDeclaredTwice: a Situation an oracle declares beside it
// cannot take a name already given, fixed or declared.
func TestSituationDeclaredTwice(t *testing.T) {
	t.Parallel()
	n := numSituations
	defer func() {
		if recover() == nil {
			t.Fatal("a Situation named twice was declared")
		}
		if numSituations != n {
			t.Fatalf("a refused Situation was counted: %d Situations, were %d", numSituations, n)
		}
	}()
	newSituation(SitStaleOutcomeFenced.String())
}
