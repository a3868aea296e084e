package backwave

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/internal/takeover"
)

// startManual is Start for package jobtest, which asks for it with a
// context carrying a takeover.Request: it registers Config.Schedules, as
// Start does, and takes every Pump over for driving by hand
// (shell.Pump.Manual) instead of starting its goroutines, filling req with
// them in order, and takes every Transition Observer's walk over the same
// way (shell.WalkPump.Manual). The caller holds c.mu, and the Client counts as started,
// so Start again is an error and Stop leaves the Pumps to their
// shell.Manual, whose Close ends them.
func (c *Client) startManual(ctx context.Context, req *takeover.Request) error {
	if err := c.startMaintenance(ctx); err != nil {
		return err
	}
	for _, p := range c.pumps {
		m, err := p.Manual(ctx)
		if err != nil {
			closeManual(req)
			return fmt.Errorf("backwave: start %s by hand: %w", p.Worker(), err)
		}
		req.Pumps = append(req.Pumps, m)
	}
	for _, w := range c.walks {
		m, err := w.Manual(ctx)
		if err != nil {
			closeManual(req)
			return fmt.Errorf("backwave: start transition observer %q by hand: %w", w.Config().Walker.Observer, err)
		}
		req.Walks = append(req.Walks, m)
	}
	return nil
}

// closeManual closes what a failed startManual took over.
func closeManual(req *takeover.Request) {
	for _, m := range req.Pumps {
		_ = m.Close()
	}
	for _, m := range req.Walks {
		_ = m.Close()
	}
	req.Pumps, req.Walks = nil, nil
}
