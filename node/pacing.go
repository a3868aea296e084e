package node

import (
	"time"
)

// Pacing is how a Pump times the Driver it drives: the two tickers that feed
// it Poll and Heartbeat events, and the two deadlines of a graceful stop. The
// Driver never reads a clock, so it never sees these durations, but its
// Leases depend on them: a heartbeat no faster than the Lease lets every
// Lease lapse between renewals. Their defaults and checks live here, beside
// the Driver's own knobs (Config), so that every knob of a Worker Group has
// one default and one check.
//
// Zero fields take their defaults (WithDefaults); Validate checks the
// result. Both take the Lease duration (Config.LeaseDuration, after its own
// default), which HeartbeatInterval follows and must stay below.
type Pacing struct {
	// PollInterval paces claim passes when no Wake-Up Hint comes
	// (DefaultPollInterval if zero).
	PollInterval time.Duration
	// HeartbeatInterval paces Lease renewal. It must be below the Lease
	// duration; zero means a third of it, so two renewals in a row may fail
	// before a Lease lapses.
	HeartbeatInterval time.Duration
	// DrainTimeout is how long a graceful stop lets running handlers finish
	// before it abandons them and relinquishes their Leases
	// (DefaultDrainTimeout if zero).
	DrainTimeout time.Duration
	// RelinquishTimeout bounds the best-effort store calls made after the
	// drain period: the last report and the Relinquish
	// (DefaultRelinquishTimeout if zero).
	RelinquishTimeout time.Duration
}

// WithDefaults returns p with zero fields set to their defaults, for a Lease
// of the given duration.
func (p Pacing) WithDefaults(lease time.Duration) Pacing {
	if p.PollInterval == 0 {
		p.PollInterval = DefaultPollInterval
	}
	if p.HeartbeatInterval == 0 {
		p.HeartbeatInterval = lease / 3
	}
	if p.DrainTimeout == 0 {
		p.DrainTimeout = DefaultDrainTimeout
	}
	if p.RelinquishTimeout == 0 {
		p.RelinquishTimeout = DefaultRelinquishTimeout
	}
	return p
}

// Validate reports the first problem with p for a Lease of the given
// duration; the error wraps ErrInvalidConfig and names the knob and its
// value.
func (p Pacing) Validate(lease time.Duration) error {
	switch {
	case p.PollInterval <= 0:
		return invalid("PollInterval %v (want > 0)", p.PollInterval)
	case p.HeartbeatInterval <= 0:
		return invalid("HeartbeatInterval %v (want > 0)", p.HeartbeatInterval)
	case p.HeartbeatInterval >= lease:
		return invalid("HeartbeatInterval %v (want below LeaseDuration %v)", p.HeartbeatInterval, lease)
	case p.DrainTimeout < 0:
		return invalid("DrainTimeout %v (want ≥ 0)", p.DrainTimeout)
	case p.RelinquishTimeout < 0:
		return invalid("RelinquishTimeout %v (want ≥ 0)", p.RelinquishTimeout)
	}
	return nil
}

// CallTimeout is the deadline of the store call that carries out c, a
// command of a machine whose Leases last lease (Machine.LeaseDuration): the
// one deadline rule of every machine's store calls.
//
// A hand-back — a Relinquish, or the WalkAdvance that releases a stopping
// walk — gets RelinquishTimeout: it is best effort, a failed one only
// degrades to the lapse, and a stop waits for it. Every other call gets a
// third of the Lease. A call holds the loop, and the Lease renewal with it,
// and a renewal answered after the Lease ran out is worthless (so is a
// claim whose Leases lapsed before it returned). A third of the Lease is
// the default heartbeat interval: a call to a store that never answers then
// costs one missed renewal, and the renewal behind it still has a third of
// the Lease to land. A call that hits its deadline fails like any other, so
// the machine's rules for failed calls apply.
func (p Pacing) CallTimeout(c StoreCommand, lease time.Duration) time.Duration {
	switch c := c.(type) {
	case Relinquish:
		return p.RelinquishTimeout
	case WalkAdvance:
		if c.Release {
			return p.RelinquishTimeout
		}
	}
	return lease / 3
}
