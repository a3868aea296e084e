package mirror

import (
	"fmt"
	"go/constant"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestEnumsMirrored checks, on the compiled packages, that every constant
// of each mirrored source type has a root constant of the same value, and
// every root constant of the mirror type a source constant.
func TestEnumsMirrored(t *testing.T) {
	t.Parallel()
	pkgs, err := enumPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Enums() {
		for _, problem := range checkEnum(pkgs, e) {
			t.Error(problem)
		}
	}
}

// TestEnumCheckBites plants an enumeration the root names only in part.
func TestEnumCheckBites(t *testing.T) {
	t.Parallel()
	pkgs, err := enumPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	// Via has more constants than JobState's values cover: mirroring
	// core.Via with JobState leaves most of them unnamed.
	got := strings.Join(checkEnum(pkgs, Enum{Name: "JobState", Source: "core.Via"}), "\n")
	for _, want := range []string{"core.ViaWorkflowRetry (13) has no constant of backwave.JobState", "backwave.StateUnknown (0) has no constant of core.Via"} {
		if !strings.Contains(got, want) {
			t.Errorf("got %q, want a report containing %q", got, want)
		}
	}
	if got := checkEnum(pkgs, Enum{Name: "Via", Source: "core.Via", Skip: map[string]string{"ViaClaim": "planted"}}); len(got) == 0 {
		t.Error("a skipped constant the root names anyway is not reported")
	}
}

// enumPackages imports the root package and every Source package from
// their export data.
func enumPackages(dir string) (map[string]*types.Package, error) {
	paths := []string{Module}
	for _, e := range Enums() {
		pkg, _, _ := strings.Cut(e.Source, ".")
		path, ok := importPath(pkg)
		if !ok {
			return nil, fmt.Errorf("%s: source %s is not job, core, store or shell", e.Name, e.Source)
		}
		if !slices.Contains(paths, path) {
			paths = append(paths, path)
		}
	}
	exports, err := exportData(dir, paths)
	if err != nil {
		return nil, err
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	out := map[string]*types.Package{}
	for _, path := range paths {
		p, err := imp.Import(path)
		if err != nil {
			return nil, err
		}
		out[p.Name()] = p
	}
	return out, nil
}

// checkEnum returns what is unmatched between e's root and source
// constants.
func checkEnum(pkgs map[string]*types.Package, e Enum) []string {
	pkg, name, _ := strings.Cut(e.Source, ".")
	rootConsts, err := constsOf(pkgs["backwave"], e.Name)
	if err != nil {
		return []string{err.Error()}
	}
	srcConsts, err := constsOf(pkgs[pkg], name)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	unmatched := func(from []*types.Const, to []*types.Const, toType string, skip map[string]string) {
		for _, c := range from {
			found := slices.ContainsFunc(to, func(d *types.Const) bool { return constant.Compare(c.Val(), token.EQL, d.Val()) })
			_, skipped := skip[c.Name()]
			switch {
			case !found && !skipped:
				out = append(out, fmt.Sprintf("%s.%s (%s) has no constant of %s", c.Pkg().Name(), c.Name(), c.Val(), toType))
			case found && skipped:
				out = append(out, fmt.Sprintf("%s.%s is skipped in the enum table, yet a constant of %s has its value", c.Pkg().Name(), c.Name(), toType))
			}
		}
	}
	unmatched(srcConsts, rootConsts, "backwave."+e.Name, e.Skip)
	unmatched(rootConsts, srcConsts, e.Source, nil)
	sort.Strings(out)
	return out
}

// constsOf returns the exported constants of the named type in p.
func constsOf(p *types.Package, typeName string) ([]*types.Const, error) {
	if p == nil {
		return nil, fmt.Errorf("package for %s not loaded", typeName)
	}
	obj, ok := p.Scope().Lookup(typeName).(*types.TypeName)
	if !ok {
		return nil, fmt.Errorf("%s has no type %s", p.Path(), typeName)
	}
	var out []*types.Const
	for _, n := range p.Scope().Names() {
		if c, ok := p.Scope().Lookup(n).(*types.Const); ok && c.Exported() && types.Identical(c.Type(), obj.Type()) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s.%s has no constants", p.Name(), typeName)
	}
	return out, nil
}
