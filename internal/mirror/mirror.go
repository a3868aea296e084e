// Package mirror is the one table of the root package's mirror types: the
// public structs (JobInfo, Transition, AuditEntry, …) that show a job, store
// or shell value in the root package's own types, and the converters
// between them. Generate writes both into the root package's
// mirror_gen.go (go generate in the module root).
//
// The table names, for each mirror, the type it mirrors and what becomes of
// every field of that type: copied by name (converted through the type
// table when the root has its own type for it), read by a computed field,
// or dropped with the reason. A source field the table does not account
// for stops the generator, so a field added to job.Job and forgotten in
// JobInfo fails go generate and the test that the checked-in output is
// current, instead of compiling and being silently dropped. The root
// package's mirror test checks the generated converters by reflection:
// every field arrives, every dropped one does not.
//
// The root package's enumerations (JobState, Via, AuditAction, …) keep
// their hand-written constants, each with its own doc; Enums lists which
// source type each mirrors, and a test checks, on the compiled packages,
// that no constant is missing on either side.
package mirror

// Mirror is one public struct of the root package and the value it mirrors.
type Mirror struct {
	// Name is the root type.
	Name string
	// Source is the mirrored type, qualified by its package name: one of
	// job, core, store or shell.
	Source string
	// Func names the converter: func Func(s Source) Name, or, with
	// Pointer, func Func(s *Source) *Name (nil for nil). With Reverse the
	// converter goes the other way, a method of the root type:
	// func (m Name) Func() Source.
	Func    string
	Pointer bool
	Reverse bool
	// Doc is the root type's doc comment, without the comment markers.
	Doc string
	// Fields are the root type's fields, in order.
	Fields []Field
	// Drop lists the source fields the root type does not show, each with
	// the reason.
	Drop map[string]string
}

// Field is one field of a mirror, or several sharing a type and a doc.
type Field struct {
	// Name is the field, or names sharing one declaration ("Claimed,
	// Reported"). Without Expr, each is copied from the source field of
	// the same name, through the type table.
	Name string
	// Doc is the field's doc comment, without the comment markers.
	Doc string
	// Expr computes the field from the source value s instead ("s.Ceiling()");
	// Type is then the field's type and Uses the source fields it reads.
	Expr string
	Type string
	Uses []string
}

// Conv says how a source type appears in the root package.
type Conv struct {
	// Source is the type as go/types writes it with full package paths.
	Source string
	// Mirror is the root package's type for it.
	Mirror string
	// To converts a source value (%s) to Mirror; From converts back, for
	// Reverse mirrors. Empty means the value is used as it is.
	To, From string
}

// Module is the module the root package is.
const Module = "github.com/backwave/backwave"

// importPath returns the import path of a package name a Source may use.
func importPath(name string) (string, bool) {
	switch name {
	case "job", "core", "store", "shell":
		return Module + "/" + name, true
	}
	return "", false
}
