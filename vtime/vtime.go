// Package vtime is Virtual Time: a clock that tests and the Simulator move
// explicitly, so years of schedule activity run in milliseconds and every run
// is reproducible.
//
// Code below the determinism boundary never reads the wall clock. It asks a
// Clock for the time; in tests and in the Simulator that Clock is a Manual
// that only moves when told to, and above the boundary the Shell passes one
// that reads the host's clock.
//
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
package vtime

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Clock tells the time. Implementations must be safe for concurrent use and
// must never go backwards.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// Epoch is the conventional start of a Manual clock that nobody set: the
// first instant of the year 2000, UTC.
var Epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// ErrBackwards is returned by Manual.Set when asked to move the clock to a
// time before its current one.
var ErrBackwards = errors.New("vtime: clock cannot move backwards")

// Manual is a Clock that only moves when Advance or Set is called. It never
// moves backwards. The zero value is not usable; call NewManual. A Manual is
// safe for concurrent use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a Manual clock reading start. Any monotonic clock
// reading is stripped from start, so the clock's times compare by wall time
// only and print the same on every run.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start.Round(0)}
}

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d and returns the new time. Advance(0)
// is allowed and changes nothing. A negative d is a programming error and
// panics: a Clock never goes backwards.
func (m *Manual) Advance(d time.Duration) time.Time {
	if d < 0 {
		panic(fmt.Sprintf("vtime: Advance(%v): negative duration", d))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
	return m.now
}

// Set moves the clock to t, which must not be before the current time; if it
// is, the clock is unchanged and the error wraps ErrBackwards. Setting the
// current time again is allowed. Any monotonic reading is stripped from t.
func (m *Manual) Set(t time.Time) error {
	t = t.Round(0)
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.Before(m.now) {
		return fmt.Errorf("%w: Set(%s) is before now (%s)", ErrBackwards, t.Format(time.RFC3339Nano), m.now.Format(time.RFC3339Nano))
	}
	m.now = t
	return nil
}
