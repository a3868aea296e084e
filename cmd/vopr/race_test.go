//go:build race

package main

// raceEnabled reports whether the race detector instruments this build: the
// pure-Go SQLite engine runs an order of magnitude slower under it.
const raceEnabled = true
