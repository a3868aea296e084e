//go:build !backwave_plant

package sim

import (
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store/memstore"
)

// plantDriver, plantWalker and plantStore plant nothing: this build has no
// planted bugs, and a Scenario with a Mutation is refused before it runs.
func plantDriver(*node.Config, plant.Bug)       {}
func plantWalker(*node.WalkerConfig, plant.Bug) {}
func plantStore(*memstore.Options, plant.Bug)   {}
func plantGather(*node.Gather, plant.Bug)       {}
