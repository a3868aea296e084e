//go:build backwave_plant

package node

import "github.com/backwave/backwave/internal/plant"

// SetPlant plants bug b in the Driver c configures, so the Simulator's
// tests can prove the oracle written for it catches it (package
// internal/plant). Only a build with the tag backwave_plant has it: no
// other build can plant a bug, whatever its configuration holds.
func (c *Config) SetPlant(b plant.Bug) { c.plant = b }

// SetPlant plants bug b in the Walker c configures, as Config.SetPlant
// does in a Driver. Only a build with the tag backwave_plant has it.
func (c *WalkerConfig) SetPlant(b plant.Bug) { c.plant = b }

// SetPlant plants bug b in g, as Config.SetPlant does in a Driver. Only a
// build with the tag backwave_plant has it.
func (g *Gather) SetPlant(b plant.Bug) { g.plant = b }
