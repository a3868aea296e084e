package backwave

import "github.com/backwave/backwave/node"

// DefaultSnoozeCap is the Config.SnoozeCap used when it is 0: the free
// snoozes one job gets over its whole existence.
const DefaultSnoozeCap = node.DefaultSnoozeCap

// NoFreeSnoozes is the Config.SnoozeCap that gives no free snooze: every
// Snooze is charged against the attempt budget like a failure.
const NoFreeSnoozes = node.NoFreeSnoozes

// WithSnoozeCap gives the handler's Wire Name its own snooze cap, in place
// of Config.SnoozeCap: how many times one of its jobs may return Snooze
// without the Attempt being charged, over the job's whole existence (an
// operator requeue gives new Attempts, not new snoozes). n of 0 gives no
// free snooze. A negative n makes NewClient fail with an error wrapping
// ErrInvalidConfig.
//
// The cap is the handler's, not the job's: it is the handler that decides
// to snooze, so the Wire Name that runs it says how often it may.
func WithSnoozeCap(n int) HandlerOption {
	return func(r *registration) { r.snoozeCap = &n }
}

// setSnoozeCaps gives a Pump's Driver configuration the Client's default
// snooze cap and the Wire Names' own, unchecked: node.Config.Validate is
// their one check.
func (p *pumpSet) setSnoozeCaps(drv *node.Config) {
	drv.SnoozeCap = p.cfg.SnoozeCap
	for wire, r := range p.exec.byWire {
		if r.snoozeCap != nil {
			if drv.SnoozeCaps == nil {
				drv.SnoozeCaps = make(map[string]int)
			}
			drv.SnoozeCaps[wire] = *r.snoozeCap
		}
	}
}
