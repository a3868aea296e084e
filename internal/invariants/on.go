//go:build race || backwave_invariants

package invariants

// Enabled reports whether this build checks the invariants: true, since it
// has the race detector or the tag backwave_invariants.
const Enabled = true
