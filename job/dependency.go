package job

import (
	"fmt"
	"strconv"
)

// DependencyMode is how a dependent reacts to the terminal states of its
// Dependency parents. A dependent waits in Awaiting Parent until every
// parent is terminal; the mode says what a parent that did not succeed does
// to it.
type DependencyMode uint8

const (
	// DependencyOnSuccess (the default) runs the dependent only if every
	// parent Succeeded: a parent that ends Dead-Lettered, Cancelled or
	// Quarantined cancels the dependent with cause parent failure, and
	// that cancel reaches the dependent's own on-success dependents in turn.
	DependencyOnSuccess DependencyMode = iota
	// DependencyOnAnyTerminal runs the dependent once every parent is
	// terminal, whatever state each one ended in.
	DependencyOnAnyTerminal
)

var dependencyModeNames = [...]string{
	DependencyOnSuccess:     "on_success",
	DependencyOnAnyTerminal: "on_any_terminal",
}

// String returns the stored name of the mode, e.g. "on_success".
func (m DependencyMode) String() string {
	if int(m) < len(dependencyModeNames) {
		return dependencyModeNames[m]
	}
	return "dependency_mode(" + strconv.Itoa(int(m)) + ")"
}

// Valid reports whether m is one of the two modes.
func (m DependencyMode) Valid() bool { return int(m) < len(dependencyModeNames) }

// ParseDependencyMode is the inverse of DependencyMode.String.
func ParseDependencyMode(s string) (DependencyMode, error) {
	for m, name := range dependencyModeNames {
		if name == s {
			return DependencyMode(m), nil
		}
	}
	return DependencyOnSuccess, fmt.Errorf("job: unknown dependency mode %q", s)
}
