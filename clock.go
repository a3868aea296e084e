package backwave

import "time"

// Clock tells a Client what time it is on this node: it stamps the Pumps'
// events and turns WithDelay into a due time. Lease and due comparisons use
// the store's clock instead. Tests give the store a vtime.Manual and leave
// Config.Clock nil, so the Client follows the store's Virtual Time and years
// of schedules play in milliseconds.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// WallClock is the host's clock (time.Now): the Client's clock over a store
// without one of its own, and the clock to give a store that takes one,
// such as the In-Memory Store, to run it in real time.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }
