package backwave

import "time"

// Clock tells a Client what time it is on this node: it stamps the Pumps'
// events and turns WithDelay into a due time. Lease and due comparisons use
// the store's clock instead. Tests pass a virtual clock to play years of
// schedules in milliseconds.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// WallClock is the host's clock (time.Now): the default Config.Clock, and
// the clock to give a store that takes one, such as the In-Memory Store.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }
