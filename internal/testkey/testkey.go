// Package testkey holds the key with which package jobtest takes a Client's
// Pumps over to drive them on Virtual Time (backwave.Client.ManualPumps).
// Code outside this module cannot import it, so it cannot make a key, and a
// zero Key is refused.
package testkey

// Key opens backwave.Client.ManualPumps. Make one with New.
type Key struct{ ok *bool }

// New returns a valid Key.
func New() Key {
	ok := true
	return Key{ok: &ok}
}

// Valid reports whether k was made by New.
func (k Key) Valid() bool { return k.ok != nil && *k.ok }
