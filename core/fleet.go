package core

import (
	"slices"
	"time"

	"github.com/backwave/backwave/job"
)

// A Mixed-Version Fleet runs nodes of two releases, and the newer one may
// handle a Wire Name the older one has no handler for. A node that claimed
// such a job would make it Quarantined (glossary, Quarantined) although
// another node of the fleet could run it. So each Pump records in the store
// the Wire Names it handles, stamped with the store's clock (a
// HandlerStamp, refreshed on the Driver's maintenance beat), and each Driver
// reads the stamps on the same beat and asks FleetSkip which Wire Names its
// claims must leave alone.

// HandlerStamp is one row of the fleet registry: Worker (a Pump) handled
// WireName when the store's clock read StampedAt.
type HandlerStamp struct {
	Worker    job.WorkerID
	WireName  string
	StampedAt time.Time
}

// HandlerLive reports whether a stamp at stampedAt shows a live handler at
// now, both on the store's clock: it is no older than grace. A stamp from the
// future (a clock that stepped back) is live. The boundary is live: a handler
// stamped exactly grace ago still counts.
func HandlerLive(stampedAt, now time.Time, grace time.Duration) bool {
	return now.Sub(stampedAt) <= grace
}

// FleetSkip returns the Wire Names a Pump that handles handles must not
// claim at now (the store's clock), sorted and distinct: those some stamp
// shows a live handler for (HandlerLive within grace) and handles lacks.
// Another node can run those jobs, so leaving them Scheduled for it is
// right, where claiming them would Quarantine them.
//
// Every other Wire Name is claimed as before. In particular a Wire Name no
// live node has handled for grace is not skipped: its jobs are claimed and
// Quarantined, loudly, as they always were; the registry delays that by at
// most grace after the last handler's last stamp, never forever. A nil
// result (the common case: every live Pump handles the same names) leaves
// the claim exactly as it is without a registry.
func FleetSkip(stamps []HandlerStamp, handles []string, now time.Time, grace time.Duration) []string {
	var skip []string
	for _, s := range stamps {
		if !HandlerLive(s.StampedAt, now, grace) || slices.Contains(handles, s.WireName) {
			continue
		}
		if !slices.Contains(skip, s.WireName) {
			skip = append(skip, s.WireName)
		}
	}
	slices.Sort(skip)
	return skip
}
