package store

import "fmt"

// The Mixed-Version Fleet's version window, written once for every store
// that carries a schema version: the SQL adapters at Open and Migrate, and
// the In-Memory Store the Simulator migrates.

// CompatN1 is the compatibility mark of a migration the release before it
// can run on ("-- compat: n-1" in the migration's first line).
const CompatN1 = "n-1"

// SchemaStep is one migration recorded in a schema: its version, its name
// as the store prints it, and its compatibility mark (CompatN1, or anything
// else for a breaking one).
type SchemaStep struct {
	Version int
	Name    string
	Compat  string
}

// CheckSchemaWindow decides whether a build that knows schema versions up to
// known may run on schema (named as the store prints it) at version current,
// whose recorded migrations above known are newer, oldest first: it may if
// current is at most known (an older schema is the migrator's business, not
// the window's), or if exactly one migration lies above known and it is
// marked CompatN1. Otherwise the error wraps ErrSchemaTooNew and names both
// versions: N and N-1 together, never wider.
func CheckSchemaWindow(schema string, current, known int, newer []SchemaStep) error {
	switch {
	case current <= known:
		return nil
	case len(newer) > 1:
		return fmt.Errorf("%w: schema %s is at version %d, %d migrations past version %d, the newest this build knows; a node may run at most one migration behind (Mixed-Version Fleet)",
			ErrSchemaTooNew, schema, current, len(newer), known)
	case len(newer) == 0:
		return fmt.Errorf("%w: schema %s is at version %d, past version %d, the newest this build knows, with no migration recorded above it",
			ErrSchemaTooNew, schema, current, known)
	case newer[0].Compat != CompatN1:
		return fmt.Errorf("%w: schema %s is at version %d, whose migration %s is not marked n-1 (compat %q): this build knows up to version %d and cannot run on it",
			ErrSchemaTooNew, schema, current, newer[0].Name, newer[0].Compat, known)
	}
	return nil
}
