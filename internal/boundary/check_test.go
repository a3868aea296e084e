package boundary

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
	"path/filepath"
	"slices"
	"strings"
)

// allowed is an allowlisted third-party package.
type allowed struct {
	path      string   // import path
	importers []string // packages (relative to the module) that may import it directly
	reason    string
}

func findAllowed(allow []allowed, path string) *allowed {
	for i := range allow {
		if allow[i].path == path {
			return &allow[i]
		}
	}
	return nil
}

// listed is one package as go list reports it.
type listed struct {
	ImportPath     string
	Dir            string
	Standard       bool
	DepOnly        bool
	GoFiles        []string
	CgoFiles       []string
	SFiles         []string
	IgnoredGoFiles []string
	Imports        []string
	Export         string
	Error          *struct{ Err string }
	DepsErrors     []*struct{ Err string }
}

// goList lists the packages matching patterns and all their dependencies,
// with export data, running go in dir with env added to the environment.
func goList(dir string, env []string, patterns ...string) (map[string]*listed, error) {
	args := append([]string{"list", "-e", "-deps", "-export",
		"-json=ImportPath,Dir,Standard,DepOnly,GoFiles,CgoFiles,SFiles,IgnoredGoFiles,Imports,Export,Error,DepsErrors"},
		patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]*listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		p := new(listed)
		if err := dec.Decode(p); err != nil {
			return nil, err
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs, nil
}

// exportImporter imports packages from the export data go list reported.
func exportImporter(fset *token.FileSet, pkgs map[string]*listed) types.Importer {
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p := pkgs[path]
		if p == nil || p.Export == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(p.Export)
	})
}

// audit runs every check on the packages below l's boundary in the module
// in dir: their dependencies (checkDeps), their own files (checkPackage),
// and that the layout and the allowlist match the module.
func audit(dir string, env []string, l layout, allow []allowed) ([]string, error) {
	pkgs, err := goList(dir, env, l.patterns()...)
	if err != nil {
		return nil, err
	}
	var out []string
	paths := sortedKeys(pkgs)
	for _, p := range l.pure {
		root := l.module + "/" + p
		if !slices.ContainsFunc(paths, func(path string) bool { return path == root || strings.HasPrefix(path, root+"/") }) {
			out = append(out, fmt.Sprintf("%s is listed below the boundary but matches no package", root))
		}
	}
	fset := token.NewFileSet()
	imp := exportImporter(fset, pkgs)
	for _, path := range paths {
		if l.isPure(path) {
			out = append(out, checkPackage(fset, imp, pkgs[path])...)
		}
	}
	out = append(out, checkDeps(l, pkgs, allow, fset, imp)...)
	for _, a := range allow {
		if pkgs[a.path] == nil {
			out = append(out, fmt.Sprintf("allowlisted %s is no longer reached from below the boundary; remove its entry", a.path))
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkDeps walks the dependencies of every pure package in pkgs. Every
// package of the module it reaches must be pure; every package neither of
// the standard library nor of the module must be allowlisted, and imported
// directly only by the packages its entry names. A violation is reported
// once, with the import chain from the first pure package (in import path
// order) that reaches it. fset and imp, when not nil, type-check an
// unlisted third-party package to show what it does.
func checkDeps(l layout, pkgs map[string]*listed, allow []allowed, fset *token.FileSet, imp types.Importer) []string {
	var out []string
	reported := map[string]bool{}
	for _, root := range sortedKeys(pkgs) {
		if !l.isPure(root) {
			continue
		}
		rootRel, _ := l.rel(root)
		for _, dep := range pkgs[root].Imports {
			if a := findAllowed(allow, dep); a != nil && !slices.Contains(a.importers, rootRel) {
				out = append(out, fmt.Sprintf("%s imports %s, which only %s may import directly (%s)",
					root, dep, strings.Join(a.importers, ", "), a.reason))
			}
		}
		// Breadth first, so each chain is a shortest one.
		parent := map[string]string{root: ""}
		queue := []string{root}
		for len(queue) > 0 {
			path := queue[0]
			queue = queue[1:]
			p := pkgs[path]
			if p == nil {
				out = append(out, fmt.Sprintf("%s is imported (%s) but go list did not report it", path, chain(parent, path)))
				continue
			}
			if p.Standard {
				continue // the standard library imports only itself
			}
			if path != root && !reported[path] {
				switch {
				case l.inModule(path) && !l.isPure(path):
					reported[path] = true
					out = append(out, fmt.Sprintf("%s is above the boundary but reached from below it: %s", path, chain(parent, path)))
				case !l.inModule(path) && findAllowed(allow, path) == nil:
					reported[path] = true
					out = append(out, unlisted(pkgs, p, chain(parent, path), fset, imp))
				}
			}
			for _, dep := range p.Imports {
				if _, seen := parent[dep]; !seen {
					parent[dep] = path
					queue = append(queue, dep)
				}
			}
		}
	}
	return out
}

// chain renders the import chain that reached path.
func chain(parent map[string]string, path string) string {
	var links []string
	for p := path; p != ""; p = parent[p] {
		links = append(links, p)
	}
	slices.Reverse(links)
	return strings.Join(links, " → ")
}

// unlisted describes a reached third-party package that is not on the
// allowlist: its chain, the standard I/O and clock packages it reaches,
// and what the checkers find in its own files.
func unlisted(pkgs map[string]*listed, p *listed, chain string, fset *token.FileSet, imp types.Importer) string {
	msg := fmt.Sprintf("%s is a third-party package not on the allowlist, reached from below the boundary: %s", p.ImportPath, chain)
	// The standard I/O and clock packages it and the third-party packages
	// behind it import (every standard package reaches runtime and more).
	var uses []string
	seen := map[string]bool{}
	var walk func(string)
	walk = func(path string) {
		q := pkgs[path]
		if seen[path] || q == nil || q.Standard {
			return
		}
		seen[path] = true
		for _, dep := range q.Imports {
			if d := pkgs[dep]; d != nil && d.Standard && (forbidden(dep) || dep == "time") && !slices.Contains(uses, dep) {
				uses = append(uses, dep)
			}
			walk(dep)
		}
	}
	walk(p.ImportPath)
	if len(uses) > 0 {
		slices.Sort(uses)
		msg += "; it or a package behind it imports " + strings.Join(uses, ", ")
	}
	if fset != nil {
		if found := checkPackage(fset, imp, p); len(found) > 0 {
			if len(found) > 3 {
				found = append(found[:3], "…")
			}
			msg += "; in its own files: " + strings.Join(found, "; ")
		}
	}
	return msg + ". Add it to the allowlist with its reason only if it is genuinely pure."
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

// checkPackage returns one message per violation in p's imports and
// non-test files, which it parses and type-checks against the export data
// imp serves.
func checkPackage(fset *token.FileSet, imp types.Importer, p *listed) []string {
	var out []string
	if p.Error != nil {
		out = append(out, fmt.Sprintf("%s: %s", p.ImportPath, p.Error.Err))
	}
	for _, e := range p.DepsErrors {
		out = append(out, fmt.Sprintf("%s: dependency: %s", p.ImportPath, e.Err))
	}
	for _, imp := range p.Imports {
		if forbidden(imp) {
			out = append(out, fmt.Sprintf("%s imports %s, which is I/O, the wall clock or global randomness", p.ImportPath, imp))
		}
	}
	if len(p.CgoFiles)+len(p.SFiles) > 0 {
		out = append(out, fmt.Sprintf("%s has cgo or assembly files, which the checks cannot see into", p.ImportPath))
	}
	for _, name := range p.IgnoredGoFiles {
		if _, ok := tagged[p.ImportPath+"/"+name]; ok {
			continue
		}
		if !strings.HasSuffix(name, "_test.go") {
			out = append(out, fmt.Sprintf("%s/%s is excluded by a build constraint; code below the boundary is the same on every platform, and the checks see only the files built here", p.ImportPath, name))
		}
	}
	// Listing the directory makes `go test` re-run this check when a file is
	// added to it (the test cache tracks directories a test opens).
	_, _ = os.ReadDir(p.Dir)
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		files = append(files, f)
	}
	info, err := typeCheck(fset, imp, p.ImportPath, files)
	if err != nil {
		out = append(out, fmt.Sprintf("%s does not type-check, so its uses cannot be resolved: %v", p.ImportPath, err))
	}
	for _, f := range files {
		out = append(out, checkFile(fset, info, p.ImportPath, f)...)
	}
	return out
}

// typeCheck type-checks a package's files, returning the info the file
// checks read and the first error.
func typeCheck(fset *token.FileSet, imp types.Importer, path string, files []*ast.File) (*types.Info, error) {
	info := &types.Info{
		Types: map[ast.Expr]types.TypeAndValue{},
		Uses:  map[*ast.Ident]types.Object{},
	}
	var first error
	conf := types.Config{Importer: imp, Error: func(err error) {
		if first == nil {
			first = err
		}
	}}
	_, _ = conf.Check(path, fset, files, info)
	return info, first
}

// checkFile finds goroutines, channels and select statements, uses of the
// wall clock, of the host's zone and of the global random source, and uses
// of go-cron beyond goCronAPI. Uses are resolved by type, so renamed and
// dot imports and method values are seen.
func checkFile(fset *token.FileSet, info *types.Info, pkgPath string, f *ast.File) []string {
	var out []string
	pos := func(p token.Pos) string {
		at := fset.Position(p)
		return fmt.Sprintf("%s/%s:%d:%d", pkgPath, filepath.Base(at.Filename), at.Line, at.Column)
	}
	// One channel report per line: a channel shows as a type, an operator
	// and a value at once.
	chanLines := map[int]bool{}
	channel := func(p token.Pos, what string) {
		if line := fset.Position(p).Line; !chanLines[line] {
			chanLines[line] = true
			out = append(out, fmt.Sprintf("%s: %s; channels belong above the boundary", pos(p), what))
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			out = append(out, fmt.Sprintf("%s: starts a goroutine", pos(n.Pos())))
		case *ast.SelectStmt:
			out = append(out, fmt.Sprintf("%s: select statement; it waits on channels, which belong above the boundary", pos(n.Pos())))
		case *ast.ChanType:
			channel(n.Pos(), "channel type")
		case *ast.SendStmt:
			channel(n.Arrow, "channel send (<-)")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				channel(n.OpPos, "channel receive (<-)")
			}
		case *ast.Ident:
			if obj := info.Uses[n]; obj != nil && obj.Pkg() != nil {
				if why := forbiddenUse(obj); why != "" {
					out = append(out, fmt.Sprintf("%s: %s %s", pos(n.Pos()), useName(obj), why))
				}
			}
		}
		if e, ok := n.(ast.Expr); ok {
			if tv, ok := info.Types[e]; ok && tv.IsValue() && tv.Type != nil {
				if _, ok := tv.Type.Underlying().(*types.Chan); ok {
					channel(e.Pos(), "channel value")
				}
			}
		}
		return true
	})
	return out
}

// useName names an object the way the rules do: Name for a package-level
// object, Type.Name for a method or a field.
func useName(obj types.Object) string {
	return obj.Pkg().Name() + "." + memberKey(obj)
}

// memberKey is obj's name, qualified by its receiver or struct type.
func memberKey(obj types.Object) string {
	switch obj := obj.(type) {
	case *types.Func:
		if recv := obj.Type().(*types.Signature).Recv(); recv != nil {
			return typeName(recv.Type()) + "." + obj.Name()
		}
	case *types.Var:
		if obj.IsField() {
			if owner := fieldOwner(obj); owner != "" {
				return owner + "." + obj.Name()
			}
		}
	}
	return obj.Name()
}

func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return t.String()
}

// fieldOwner returns the name of the package-level struct type declaring
// field v, or "".
func fieldOwner(v *types.Var) string {
	scope := v.Pkg().Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok {
			continue
		}
		if s, ok := tn.Type().Underlying().(*types.Struct); ok {
			for i := range s.NumFields() {
				if s.Field(i) == v {
					return name
				}
			}
		}
	}
	return ""
}

// goCronPath is the import path of go-cron, whose use goCronAPI bounds.
const goCronPath = "github.com/netresearch/go-cron"

// goCronBitFields are SpecSchedule's bit sets, go-cron's private layout.
var goCronBitFields = []string{"Second", "Minute", "Hour", "Dom", "Month", "Dow"}

// forbiddenUse says why a use of obj is not allowed below the boundary, or
// returns "".
func forbiddenUse(obj types.Object) string {
	path := obj.Pkg().Path()
	if !slices.Contains([]string{"time", "math/rand", "math/rand/v2", "context", "sync", goCronPath}, path) {
		return ""
	}
	key := memberKey(obj)
	switch path {
	case "time":
		switch key {
		case "Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker":
			return "reads or waits on the wall clock"
		case "LoadLocation":
			return "reads zone files; a zone arrives as a *time.Location from above"
		case "Local", "Time.Local":
			return "depends on the host's local zone"
		}
	case "math/rand", "math/rand/v2":
		if fn, ok := obj.(*types.Func); ok && fn.Type().(*types.Signature).Recv() == nil &&
			!slices.Contains([]string{"New", "NewPCG", "NewChaCha8", "NewZipf", "NewSource"}, key) {
			return "draws from the global random source; use a generator seeded from stable inputs"
		}
	case "context":
		switch key {
		case "WithTimeout", "WithTimeoutCause", "WithDeadline", "WithDeadlineCause":
			return "arms a wall-clock timer"
		case "AfterFunc":
			return "starts a goroutine"
		}
	case "sync":
		if key == "WaitGroup.Go" {
			return "starts a goroutine"
		}
	case goCronPath:
		if _, ok := goCronAPI[key]; ok {
			return ""
		}
		owner, field, _ := strings.Cut(key, ".")
		switch {
		case owner == "SpecSchedule" && slices.Contains(goCronBitFields, field), key == "NormalizeDOW":
			return "reads go-cron's private bit layout; use the parsed Schedule's Next"
		case key == "New" || owner == "Cron" || owner == "Entry":
			return "constructs or runs go-cron's scheduler, which has goroutines, timers and the wall clock; only its parser is allowed"
		case key == "AnalyzeSpec" || key == "AnalyzeSpecWithHash":
			return "reads the wall clock (its NextRun is from time.Now)"
		}
		return "is not on the allowlist of go-cron's parser API (goCronAPI)"
	}
	return ""
}

// packageDoc returns the package doc of a listed package: the comments
// above the package clause of its Go files, in file order.
func packageDoc(p *listed) (string, error) {
	var docs []string
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return "", err
		}
		if f.Doc != nil {
			docs = append(docs, f.Doc.Text())
		}
	}
	return strings.Join(docs, "\n"), nil
}
