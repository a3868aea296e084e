//go:build !race

package postgres_test

// raceEnabled reports whether the race detector instruments this build.
const raceEnabled = false
