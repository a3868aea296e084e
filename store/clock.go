package store

import "github.com/backwave/backwave/vtime"

// ClockSource is implemented by a store that keeps its own clock: the clock
// every one of its Lease and due comparisons reads. The In-Memory Store
// (on Virtual Time unless told otherwise) and the Embedded Adapter
// implement it; the Networked Adapter does not, its clock being the database
// server's. A Client over a ClockSource stamps its events and turns a delay
// into a due time on that same clock, so a store on Virtual Time and the
// node never disagree about what time it is.
type ClockSource interface {
	// Clock returns the store's clock.
	Clock() vtime.Clock
}
