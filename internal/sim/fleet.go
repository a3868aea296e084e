package sim

import "github.com/backwave/backwave/store"

// afterStamp notes a fleet registry stamp the store applied.
func (w *world) afterStamp(n *simNode, p store.FleetStampParams, v store.FleetView) {}
