package node

import "time"

// The defaults table: every default of every knob of the machines a node
// runs — the Driver (Config), the Pump that paces it (Pacing) and a
// Transition Observer's Walker (WalkerConfig) — written once, here. Each
// configuration's WithDefaults fills its zero fields from it and its
// Validate checks the result, with errors wrapping ErrInvalidConfig; the
// layers above (package shell, the root package) forward their values
// unchanged and name these constants rather than restate them.
const (
	// DefaultPoolSize is the PoolSize of a Config that sets none.
	DefaultPoolSize = 10
	// DefaultLeaseDuration is the LeaseDuration of a Config that sets none.
	DefaultLeaseDuration = 60 * time.Second
	// DefaultMaxClaimBatch is the MaxClaimBatch of a Config that sets none.
	DefaultMaxClaimBatch = 32
	// DefaultMaintenanceInterval is the MaintenanceInterval of a Config
	// that sets none.
	DefaultMaintenanceInterval = 5 * time.Second
	// DefaultExpireBatch is the ExpireBatch of a Config that sets none.
	DefaultExpireBatch = 1000
	// DefaultMaxMintOccurrences is the MaxMintOccurrences of a Config that
	// sets none.
	DefaultMaxMintOccurrences = 1000
	// DefaultAttemptTimeoutGrace is the AttemptTimeoutGrace of a Config
	// that sets none.
	DefaultAttemptTimeoutGrace = 10 * time.Second
	// DefaultHandlerGrace is the HandlerGrace of a Config that sets none and
	// whose MaintenanceInterval is at most 20 s; a longer MaintenanceInterval
	// gets three of them.
	DefaultHandlerGrace = time.Minute
	// DefaultPurgeBatch is the RetentionPolicy.Batch used when it is 0.
	DefaultPurgeBatch = 1000
	// DefaultSnoozeCap is the SnoozeCap of a Config that sets none: the
	// free snoozes one job gets over its whole existence.
	DefaultSnoozeCap = 25
	// NoFreeSnoozes is the SnoozeCap that gives no free snooze: every
	// snooze is charged like a failure.
	NoFreeSnoozes = -1

	// DefaultPollInterval is the PollInterval of a Pacing that sets none.
	DefaultPollInterval = time.Second
	// DefaultDrainTimeout is the DrainTimeout of a Pacing that sets none:
	// how long a stopping Pump or walk lets a handler or a delivery in
	// flight finish.
	DefaultDrainTimeout = 30 * time.Second
	// DefaultRelinquishTimeout is the RelinquishTimeout of a Pacing that
	// sets none.
	DefaultRelinquishTimeout = 5 * time.Second

	// DefaultWalkLeaseDuration is the LeaseDuration of a WalkerConfig that
	// sets none: the Lease on a Transition Observer's walk.
	DefaultWalkLeaseDuration = 30 * time.Second
	// DefaultWalkInterval is the Interval of a WalkerConfig that sets none.
	DefaultWalkInterval = time.Second
	// DefaultWalkMaxBackoff is the MaxBackoff of a WalkerConfig that sets
	// none.
	DefaultWalkMaxBackoff = time.Minute
	// DefaultWalkLimit is the Limit of a WalkerConfig that sets none.
	DefaultWalkLimit = 1000
)
