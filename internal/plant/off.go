//go:build !backwave_plant

package plant

// Enabled reports whether this build compiles planted bugs in: false, since
// this build lacks the tag backwave_plant.
const Enabled = false
