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

// Defaults of Pacing, used by Pacing.WithDefaults.
const (
	// DefaultPollInterval is the PollInterval of a Pacing that sets none.
	DefaultPollInterval = time.Second
	// DefaultDrainTimeout is the DrainTimeout of a Pacing that sets none.
	DefaultDrainTimeout = 30 * time.Second
	// DefaultRelinquishTimeout is the RelinquishTimeout of a Pacing that
	// sets none.
	DefaultRelinquishTimeout = 5 * time.Second
)

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
