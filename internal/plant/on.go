//go:build backwave_plant

package plant

// Enabled reports whether this build compiles planted bugs in.
const Enabled = true
