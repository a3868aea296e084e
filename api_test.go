package backwave_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The rule the public-API walk enforces (STYLE.md: "a user should never
// import job, store or node to call a method of Client or Admin"):
//
// Every exported identifier of the root package — function, variable,
// constant, type, and every exported method of an exported type — names in
// its parameters, results, type parameters and type arguments, exported
// struct fields, embedded types and interface methods only
//
//   - types the root package declares (not aliases: go doc shows an alias's
//     target name and nothing of its fields, methods or constants),
//   - types of the standard library (database/sql included) and of pgx
//     (github.com/jackc/pgx/v5/...), or
//   - the shared aliases listed in sharedAliases, each with its reason: a
//     type the root package shares with the store under its own name. The
//     walk does not look behind a shared alias, and a shared alias may not
//     name a struct, whose fields go doc would hide.
//
// Any other type of this module (job, store, node, core, shell, vtime, …)
// or of another third-party package is reported with the path that
// reaches it. Unexported fields and methods, and unexported types, are not
// API and are not walked.

const rootPath = "github.com/backwave/backwave"

// sharedAliases are the root aliases of types of this module, with the
// reason each is shared rather than declared.
var sharedAliases = map[string]string{
	"JobID":   "the job identity every layer passes and the store assigns: an int64, nothing for go doc to hide",
	"Attempt": "the Attempt number every layer fences on: an int32, nothing for go doc to hide",
	"WorkflowID": "the Workflow identity the store assigns and every Workflow surface passes: an int64, " +
		"nothing for go doc to hide",
	"Store": "the handle an adapter opens, handed to NewClient and NewAdmin; its methods are the Storage Contract " +
		"that adapters implement, not this package's API",
	"Monitor": "the read side of a Store, as a read replica an adapter opens serves it (postgres.OpenReplica), handed " +
		"to WithReplica; like Store's, its methods are the Storage Contract's, not this package's API",
}

// TestPublicAPIUsesRootTypes walks the root package's exported API, read
// from its export data, and fails on every type it names that the rule
// above does not allow.
func TestPublicAPIUsesRootTypes(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	imp := exportImporter(t, fset)
	pkg, err := imp.Import(rootPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range apiViolations(pkg, sharedAliases) {
		t.Error(v)
	}
}

// TestAPIWalkBites plants each kind of violation in a package that claims
// the root's import path and checks the walk reports exactly those.
func TestAPIWalkBites(t *testing.T) {
	t.Parallel()
	const src = `package backwave

import (
	"context"
	"database/sql"
	"time"

	"github.com/jackc/pgx/v5"
	cron "github.com/netresearch/go-cron"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

type JobID = job.ID
type Store = store.Store
type Row = job.Job
type Hidden = job.Tag
type Local = Own

type Own struct {
	A JobID
	B job.State
	store.JobFilter
	c job.Job
	D []map[string]*node.QueueWeight
	E *sql.DB
	T pgx.Tx
	F func(context.Context) (time.Time, error)
}

func (Own) M() []job.Tag   { return nil }
func (Own) m() job.Tag     { return job.Tag{} }
func (*Own) P(store.Actor) {}

type Iface interface {
	N() job.Job
	n() job.Job
	store.History
}

type Gen[T any] struct{ V T }

var V Gen[job.ID]
var E = store.ErrNotFound

const K = job.StateRunning
const U = 3

func F(ctx context.Context, s Store, id JobID) (time.Time, error) { return time.Time{}, nil }
func G(p store.JobListParams)                                     {}
func C() *cron.Parser                                             { return nil }
func H[T interface{ ~int | job.State }]()                         {}
func f() job.Job                                                  { return job.Job{} }
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "planted.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: exportImporter(t, fset, "database/sql", "github.com/jackc/pgx/v5")}
	pkg, err := conf.Check(rootPath, fset, []*ast.File{file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	shared := map[string]string{"JobID": "planted", "Store": "planted", "Row": "planted", "Gone": "planted"}
	var got []string
	for _, v := range apiViolations(pkg, shared) {
		got = append(got, v[:strings.Index(v, ": ")])
	}
	slices.Sort(got)
	want := []string{
		"C", "G", "Gone", "H[T]", "Hidden", "Iface", "Iface.N", "K", "Own.B", "Own.D", "Own.JobFilter", "Own.M", "Own.P", "Row", "V",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the walk reported %q, want %q; in full:\n%s", got, want, strings.Join(apiViolations(pkg, shared), "\n"))
	}
}

// apiViolations returns one message per type the exported API of pkg
// names against the rule, sorted, each starting with the path that reaches
// it and a colon.
func apiViolations(pkg *types.Package, shared map[string]string) []string {
	w := &apiWalker{root: pkg.Path(), shared: shared, seen: map[string]bool{}}
	scope := pkg.Scope()
	for name := range shared {
		if obj, ok := scope.Lookup(name).(*types.TypeName); !ok || !obj.IsAlias() {
			w.report(name, "listed as a shared alias, but the package declares no alias of that name; remove the entry")
		}
	}
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.TypeName:
			if a, ok := obj.Type().(*types.Alias); ok {
				w.alias(name, a)
				continue
			}
			named, ok := obj.Type().(*types.Named)
			if !ok {
				continue
			}
			w.typeParams(name, named.TypeParams())
			w.walk(name, named.Underlying())
			for m := range named.Methods() {
				if m.Exported() {
					w.walk(name+"."+m.Name(), m.Type())
				}
			}
		default:
			w.walk(name, obj.Type())
		}
	}
	slices.Sort(w.out)
	return w.out
}

type apiWalker struct {
	root   string
	shared map[string]string
	seen   map[string]bool
	out    []string
}

func (w *apiWalker) report(path, msg string) {
	m := path + ": " + msg
	if !w.seen[m] {
		w.seen[m] = true
		w.out = append(w.out, m)
	}
}

// alias checks an exported root alias: a shared one may not name a struct,
// and any other is walked like the type it names.
func (w *apiWalker) alias(name string, a *types.Alias) {
	if _, ok := w.shared[name]; ok {
		if _, isStruct := a.Rhs().Underlying().(*types.Struct); isStruct {
			w.report(name, fmt.Sprintf("shared alias of %s, a struct: go doc hides its fields; declare the type in the root package", a.Rhs()))
		}
		return
	}
	w.walk(name, a.Rhs())
}

func (w *apiWalker) typeParams(path string, tps *types.TypeParamList) {
	for tp := range tps.TypeParams() {
		w.walk(path+"["+tp.Obj().Name()+"]", tp.Constraint())
	}
}

func (w *apiWalker) walk(path string, t types.Type) {
	switch t := t.(type) {
	case *types.Basic:
	case *types.Alias:
		if obj := t.Obj(); obj.Pkg() != nil && obj.Pkg().Path() == w.root {
			if _, ok := w.shared[obj.Name()]; ok {
				return
			}
		}
		w.walk(path, t.Rhs())
	case *types.Named:
		for ta := range t.TypeArgs().Types() {
			w.walk(path, ta)
		}
		obj := t.Obj()
		if obj.Pkg() == nil { // error, comparable
			return
		}
		switch p := obj.Pkg().Path(); {
		case p == w.root:
			// Declared here: walked where it is declared, or unexported
			// and opaque.
		case p == rootPath || strings.HasPrefix(p, rootPath+"/"):
			w.report(path, fmt.Sprintf("names %s.%s, a type of this module outside the root package; declare a root type "+
				"(converted at the boundary) or, for a shared scalar or the store handle, a shared alias", p, obj.Name()))
		case isStandard(p) || p == "github.com/jackc/pgx/v5" || strings.HasPrefix(p, "github.com/jackc/pgx/v5/"):
		default:
			w.report(path, fmt.Sprintf("names %s.%s, a third-party type other than pgx's", p, obj.Name()))
		}
	case *types.Pointer:
		w.walk(path, t.Elem())
	case *types.Slice:
		w.walk(path, t.Elem())
	case *types.Array:
		w.walk(path, t.Elem())
	case *types.Chan:
		w.walk(path, t.Elem())
	case *types.Map:
		w.walk(path, t.Key())
		w.walk(path, t.Elem())
	case *types.Signature:
		w.typeParams(path, t.TypeParams())
		w.walk(path, t.Params())
		w.walk(path, t.Results())
	case *types.Tuple:
		for v := range t.Variables() {
			w.walk(path, v.Type())
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() || f.Embedded() {
				w.walk(path+"."+f.Name(), f.Type())
			}
		}
	case *types.Interface:
		for m := range t.ExplicitMethods() {
			if m.Exported() {
				w.walk(path+"."+m.Name(), m.Type())
			}
		}
		for e := range t.EmbeddedTypes() {
			w.walk(path, e)
		}
	case *types.Union:
		for term := range t.Terms() {
			w.walk(path, term.Type())
		}
	case *types.TypeParam:
		// Its constraint is walked with the type parameter list.
	default:
		w.report(path, fmt.Sprintf("names %s, a kind of type the walk does not know", t))
	}
}

// isStandard reports whether the import path is of the standard library:
// its first element has no dot.
func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// exportImporter imports the root package, the extra packages and their
// dependencies from the export data go list builds for them.
func exportImporter(t *testing.T, fset *token.FileSet, extra ...string) types.Importer {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-export", "-json=ImportPath,Export", "."}, extra...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
}
