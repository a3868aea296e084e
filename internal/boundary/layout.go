// Package boundary holds the determinism boundary: the one list of the
// packages below it (backwave, in this file), the paragraph each of their
// package docs carries (Paragraph), and the tests that keep it true. A
// package below the boundary imports no I/O, reads no wall clock, starts
// no goroutines, uses no channels and no global randomness, and reaches no
// third-party package that is not on an allowlist with its reason. See
// DESIGN.md, "The determinism boundary".
//
// The rules are data in boundary_test.go; the checkers are in
// check_test.go, and bites_test.go plants each kind of violation to show
// it is reported.
package boundary

import (
	"slices"
	"strings"
)

const module = "github.com/backwave/backwave"

// backwave is this module's boundary: the one list of its packages below
// it, which every check reads.
var backwave = layout{
	module: module,
	// Package roots below the boundary; each covers its subpackages, except
	// the flat ones, unless a subpackage is listed in above.
	pure: []string{"job", "core", "node", "store", "store/memstore", "vtime", "internal/sim", "internal/plant", "internal/invariants"},
	flat: []string{"store"},
	// Subpackages of pure roots that live above the boundary.
	above: []string{"store/storetest", "store/sqlite", "store/postgres", "store/mariadb"},
}

// Paragraph is the section every package below the boundary carries in
// its package doc, word for word (line breaks may differ); a package may
// follow it with what the rule means for it in particular.
const Paragraph = `# Determinism boundary

This package is below the determinism boundary: it reads no wall clock,
arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
os or database driver) and draws no global randomness. Time and seeds
arrive as values, so the same inputs give the same results on every run.
The boundary test (internal/boundary) holds it to this.`

// layout says which packages of a module are below the boundary.
type layout struct {
	module string
	pure   []string // roots below the boundary, relative to module
	flat   []string // pure roots that do not cover their subpackages
	above  []string // subpackages of pure roots that are above the boundary
}

func (l layout) rel(importPath string) (string, bool) {
	if importPath == l.module {
		return "", true
	}
	return strings.CutPrefix(importPath, l.module+"/")
}

func (l layout) inModule(importPath string) bool {
	_, ok := l.rel(importPath)
	return ok
}

func (l layout) isPure(importPath string) bool {
	rel, ok := l.rel(importPath)
	if !ok {
		return false
	}
	for _, a := range l.above {
		if rel == a || strings.HasPrefix(rel, a+"/") {
			return false
		}
	}
	for _, p := range l.pure {
		if rel == p || (!slices.Contains(l.flat, p) && strings.HasPrefix(rel, p+"/")) {
			return true
		}
	}
	return false
}

// patterns are the go list patterns that match every pure package.
func (l layout) patterns() []string {
	var out []string
	for _, p := range l.pure {
		if slices.Contains(l.flat, p) {
			out = append(out, l.module+"/"+p)
		} else {
			out = append(out, l.module+"/"+p+"/...")
		}
	}
	return out
}

// docReport says what is wrong with the package doc of a package below the
// boundary, or "" if it carries Paragraph.
func docReport(doc string) string {
	if doc == "" {
		return "has no package doc; it must carry the determinism boundary paragraph (boundary.Paragraph)"
	}
	if !strings.Contains(strings.Join(strings.Fields(doc), " "), strings.Join(strings.Fields(Paragraph), " ")) {
		return "package doc lacks the determinism boundary paragraph, word for word (boundary.Paragraph)"
	}
	return ""
}
