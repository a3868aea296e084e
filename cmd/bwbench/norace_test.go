//go:build !race

package main

// raceEnabled reports whether the race detector instruments this build: it
// allocates shadow state of its own and slows every goroutine hand-off.
const raceEnabled = false
