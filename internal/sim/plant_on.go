//go:build backwave_plant

package sim

import (
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store/memstore"
)

// plantDriver, plantWalker and plantStore plant a Scenario's Mutation
// through the setters only this build has (package internal/plant).
func plantDriver(c *node.Config, b plant.Bug)       { c.SetPlant(b) }
func plantWalker(c *node.WalkerConfig, b plant.Bug) { c.SetPlant(b) }
func plantStore(o *memstore.Options, b plant.Bug)   { o.SetPlant(b) }
func plantGather(g *node.Gather, b plant.Bug)       { g.SetPlant(b) }
