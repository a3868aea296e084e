//go:build !race && !backwave_invariants

package invariants

// Enabled reports whether this build checks the invariants: false, since it
// has neither the race detector nor the tag backwave_invariants.
const Enabled = false
