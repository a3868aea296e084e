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
// them in order. The caller holds c.mu, and the Client counts as started,
// so Start again is an error and Stop leaves the Pumps to their
// shell.Manual, whose Close ends them.
func (c *Client) startManual(ctx context.Context, req *takeover.Request) error {
	if err := c.startMaintenance(ctx); err != nil {
		return err
	}
	for _, p := range c.pumps {
		m, err := p.Manual(ctx)
		if err != nil {
			for _, done := range req.Pumps {
				_ = done.Close()
			}
			req.Pumps = nil
			return fmt.Errorf("backwave: start %s by hand: %w", p.Worker(), err)
		}
		req.Pumps = append(req.Pumps, m)
	}
	return nil
}
