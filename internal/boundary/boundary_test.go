// Package boundary holds the test that keeps the determinism boundary true:
// the packages below it (job, core, node, store, store/memstore, vtime, internal/sim)
// import no I/O, read no wall clock, start no goroutines and use no global
// randomness. See DESIGN.md, "The determinism boundary".
package boundary

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/backwave/backwave"

// pure lists the package roots below the boundary; a root covers its
// subpackages unless excluded.
var pure = []string{"job", "core", "node", "store", "store/memstore", "vtime", "internal/sim"}

// above lists subpackages of pure roots that live above the boundary.
var above = []string{"store/storetest", "store/sqlite", "store/postgres"}

// forbiddenImports are packages (and their subpackages) a pure package must not
// import directly.
var forbiddenImports = []string{
	"net", "os", "database", "syscall", "io/fs", "io/ioutil", "math/rand",
	"crypto/rand", "runtime", "unsafe", "log", "plugin",
	"github.com/jackc", "modernc.org", "github.com/mattn",
}

// allowedImports are exceptions to forbiddenImports: pure parsing, no I/O.
var allowedImports = []string{"net/url", "math/rand/v2"}

// forbiddenCalls are functions of package time that read or wait on the wall
// clock.
var forbiddenCalls = map[string]bool{
	"Now": true, "Sleep": true, "Since": true, "Until": true, "After": true,
	"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true,
}

// forbiddenRandCalls are math/rand/v2 top-level functions that draw from the
// global source. Constructing a seeded generator (rand.New, rand.NewPCG) is
// allowed.
var forbiddenRandCalls = map[string]bool{
	"Int": true, "IntN": true, "Int32": true, "Int32N": true, "Int64": true,
	"Int64N": true, "Uint32": true, "Uint32N": true, "Uint64": true, "Uint64N": true,
	"UintN": true, "Float32": true, "Float64": true, "Perm": true, "Shuffle": true,
	"N": true, "NormFloat64": true, "ExpFloat64": true, "Uint": true,
}

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

func isPure(importPath string) bool {
	rel, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return false
	}
	for _, a := range above {
		if rel == a || strings.HasPrefix(rel, a+"/") {
			return false
		}
	}
	for _, p := range pure {
		if rel == p || (p != "store" && strings.HasPrefix(rel, p+"/")) {
			return true
		}
	}
	return false
}

func TestDeterminismBoundary(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if !isPure(p.ImportPath) {
			continue
		}
		checked++
		for _, v := range checkPackage(p) {
			t.Error(v)
		}
	}
	if checked < 4 {
		t.Fatalf("checked only %d packages below the boundary; the package list is wrong", checked)
	}
}

// checkPackage returns one message per violation in p's non-test files.
func checkPackage(p pkg) []string {
	var out []string
	for _, imp := range p.Imports {
		if forbidden(imp) {
			out = append(out, fmt.Sprintf("%s imports %s, which is I/O, the wall clock or global randomness", p.ImportPath, imp))
		}
	}
	// Listing the directory makes `go test` re-run this check when a file is
	// added to it (the test cache tracks directories a test opens).
	_, _ = os.ReadDir(p.Dir)
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		path := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		out = append(out, checkFile(fset, f)...)
	}
	return out
}

func forbidden(imp string) bool {
	if slices.Contains(allowedImports, imp) {
		return false
	}
	for _, f := range forbiddenImports {
		if imp == f || strings.HasPrefix(imp, f+"/") {
			return true
		}
	}
	return false
}

// checkFile finds go statements and calls to the wall clock or the global
// random source, resolving import names.
func checkFile(fset *token.FileSet, f *ast.File) []string {
	names := map[string]string{} // local name → import path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if path == "math/rand/v2" {
			name = "rand"
		}
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = path
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			out = append(out, fmt.Sprintf("%s: starts a goroutine", fset.Position(n.Pos())))
		case *ast.SelectorExpr:
			id, ok := n.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch names[id.Name] {
			case "time":
				if forbiddenCalls[n.Sel.Name] {
					out = append(out, fmt.Sprintf("%s: time.%s reads or waits on the wall clock", fset.Position(n.Pos()), n.Sel.Name))
				}
			case "math/rand/v2":
				if forbiddenRandCalls[n.Sel.Name] {
					out = append(out, fmt.Sprintf("%s: rand.%s draws from the global random source", fset.Position(n.Pos()), n.Sel.Name))
				}
			}
		}
		return true
	})
	return out
}

// TestCheckerBites plants each kind of violation in a scratch package and
// shows the checker reports it, so a green boundary test means something.
func TestCheckerBites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src, imp string
		want           string
	}{
		{"wall clock", "package x\nimport \"time\"\nfunc f() time.Time { return time.Now() }\n", "", "time.Now"},
		{"renamed time", "package x\nimport clock \"time\"\nfunc f() { clock.Sleep(1) }\n", "", "time.Sleep"},
		{"goroutine", "package x\nfunc f() { go func() {}() }\n", "", "goroutine"},
		{"global rand", "package x\nimport \"math/rand/v2\"\nfunc f() int { return rand.IntN(3) }\n", "", "global random"},
		{"os import", "package x\n", "os", "imports os"},
		{"sql import", "package x\n", "database/sql", "imports database/sql"},
		{"net import", "package x\n", "net/http", "imports net/http"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		p := pkg{ImportPath: module + "/core/x", Dir: dir, GoFiles: []string{"x.go"}}
		if tc.imp != "" {
			p.Imports = []string{tc.imp}
		}
		got := strings.Join(checkPackage(p), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: checker said %q, want a report containing %q", tc.name, got, tc.want)
		}
	}
	clean := pkg{ImportPath: module + "/core/x", Imports: []string{"time", "fmt", "net/url", "math/rand/v2"}}
	if v := checkPackage(clean); len(v) != 0 {
		t.Errorf("clean package flagged: %v", v)
	}
	if !isPure(module+"/core/cron") || isPure(module+"/store/sqlite") || isPure(module+"/shell") || !isPure(module+"/store") {
		t.Error("isPure classifies packages wrongly")
	}
}
