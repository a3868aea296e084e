package backwave

import (
	"context"
	"errors"
	"fmt"

	"github.com/backwave/backwave/internal/testkey"
	"github.com/backwave/backwave/shell"
)

// ManualPumps is for package jobtest, which drives a Client on Virtual
// Time; use jobtest.New rather than calling it. Its key's type is internal
// to this module, so code elsewhere cannot make a valid one.
//
// It registers Config.Schedules, as Start does, and takes every Pump over
// for driving by hand (shell.Pump.Manual), in order. The Client then counts
// as started: Start returns an error, and Stop leaves the Pumps to their
// shell.Manual, whose Close ends them.
func (c *Client) ManualPumps(ctx context.Context, k testkey.Key) ([]*shell.Manual, error) {
	if !k.Valid() {
		return nil, errors.New("backwave: manual pumps: not a key of package jobtest")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopped:
		return nil, errors.New("backwave: manual pumps: the Client was stopped")
	case c.started:
		return nil, errors.New("backwave: manual pumps: the Client is already started")
	}
	c.started = true
	if err := c.startMaintenance(ctx); err != nil {
		return nil, err
	}
	out := make([]*shell.Manual, 0, len(c.pumps))
	for _, p := range c.pumps {
		m, err := p.Manual(ctx)
		if err != nil {
			for _, done := range out {
				_ = done.Close()
			}
			return nil, fmt.Errorf("backwave: manual pumps: %s: %w", p.Worker(), err)
		}
		out = append(out, m)
	}
	return out, nil
}
