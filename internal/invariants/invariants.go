// Package invariants holds the checks of broken internal invariants that
// are too costly, or too unforgiving, for a production build: misuse of a
// machine's protocol (a reply for an operation not in flight, say) that a
// production build survives by dropping, but that a test must see.
//
// The checks are compiled in by a build with the race detector (go test
// -race) or the tag backwave_invariants, where Enabled is the constant
// true; in every other build it is the constant false, so a check written
//
//	if invariants.Enabled && broken {
//		invariants.Failf("…", args…)
//	}
//
// folds away, its arguments never evaluated, and no hot path pays for it.
// (As cockroachdb/pebble's internal/invariants.)
//
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
package invariants

import "fmt"

// Failf reports a broken invariant: it panics with the formatted message.
// Call it only under Enabled (see the package doc).
func Failf(format string, args ...any) {
	panic(fmt.Sprintf("backwave: broken invariant: "+format, args...))
}
