//go:build backwave_plant

package memstore

import "github.com/backwave/backwave/internal/plant"

// SetPlant plants bug b in the Store these Options make, so the
// Simulator's tests can prove the oracle written for it catches it
// (package internal/plant). Only a build with the tag backwave_plant has
// it: no other build can plant a bug, whatever its Options hold.
func (o *Options) SetPlant(b plant.Bug) { o.plant = b }
