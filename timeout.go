package backwave

import (
	"time"

	"github.com/backwave/backwave/node"
)

// DefaultAttemptTimeoutGrace is the Config.AttemptTimeoutGrace used when it
// is 0.
const DefaultAttemptTimeoutGrace = node.DefaultAttemptTimeoutGrace

// WithAttemptTimeout bounds each Attempt of the handler's Wire Name to d, in
// place of Config.AttemptTimeout; d of 0 lets its Attempts run without a
// timeout whatever the Client's default. A negative d makes NewClient fail
// with an error wrapping ErrInvalidConfig.
//
// When d is over, the handler's context is cancelled with ErrAttemptTimeout
// as its cause (context.Cause). A handler that then returns an error fails
// the Attempt with Failure Detail naming the timeout, and the retry policy
// applies as to any failure; one that returns nil anyway succeeds. A
// handler that ignores its context and is still running
// Config.AttemptTimeoutGrace later no longer has its Lease renewed: the
// Lease lapses, the lapse counts as a failed Attempt, and the job runs
// again on whichever node claims it (At-Least-Once Execution). The ignoring
// handler still occupies its Worker until it returns, so its Worker Group
// does not claim past PoolSize, and its late outcome is fenced out once the
// job has moved on.
func WithAttemptTimeout(d time.Duration) HandlerOption {
	return func(r *registration) { r.timeout = &d }
}

// setAttemptTimeouts gives a Pump's Driver configuration the Client's
// default attempt timeout and grace and the Wire Names' own timeouts,
// unchecked: node.Config.Validate is their one check.
func (p *pumpSet) setAttemptTimeouts(drv *node.Config) {
	drv.AttemptTimeout = p.cfg.AttemptTimeout
	drv.AttemptTimeoutGrace = p.cfg.AttemptTimeoutGrace
	for wire, r := range p.exec.byWire {
		if r.timeout != nil {
			if drv.AttemptTimeouts == nil {
				drv.AttemptTimeouts = make(map[string]time.Duration)
			}
			drv.AttemptTimeouts[wire] = *r.timeout
		}
	}
}
