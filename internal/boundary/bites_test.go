package boundary

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tests here plant each kind of violation and show the checkers report
// it, so a green TestDeterminismBoundary means something.

// TestFileChecksBite type-checks planted sources against the real export
// data of the standard library and go-cron and runs checkFile on them.
func TestFileChecksBite(t *testing.T) {
	t.Parallel()
	pkgs, err := goList(filepath.Join("..", ".."), nil, "time", "math/rand/v2", "context", "sync", goCronPath)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	imp := exportImporter(fset, pkgs)
	const x, cron = module + "/core/x", module + "/core/cron"
	for _, tc := range []struct {
		name, path, src string
		want            string // a substring of the report; "" for a clean source
	}{
		{"wall clock", x, `import "time"; func f() time.Time { return time.Now() }`, "time.Now reads or waits on the wall clock"},
		{"renamed time", x, `import clock "time"; func f() { clock.Sleep(1) }`, "time.Sleep reads or waits"},
		{"dot import", x, `import . "time"; func f() Duration { return Since(Time{}) }`, "time.Since reads or waits"},
		{"method value", x, `import "time"; var now = time.Now`, "time.Now reads"},
		{"timer", x, `import "time"; func f() { time.AfterFunc(1, func() {}) }`, "time.AfterFunc reads or waits"},
		{"zone files", x, `import "time"; func f() { time.LoadLocation("UTC") }`, "time.LoadLocation reads zone files"},
		{"host zone", x, `import "time"; func f(t time.Time) time.Time { return t.Local() }`, "time.Time.Local depends on the host's local zone"},
		{"goroutine", x, `func f() { go func() {}() }`, "starts a goroutine"},
		{"WaitGroup.Go", x, `import "sync"; func f(wg *sync.WaitGroup) { wg.Go(func() {}) }`, "sync.WaitGroup.Go starts a goroutine"},
		{"context timer", x, `import ("context"; "time"); func f(ctx context.Context) { context.WithTimeout(ctx, time.Second) }`, "context.WithTimeout arms a wall-clock timer"},
		{"channel type", x, `type pipe chan int`, "channel type"},
		{"make chan", x, `var c = make(chan int)`, "channel"},
		{"send", x, "func f(c chan int) {\n c <- 1 }", "channel send"},
		{"receive", x, `import "context"; func f(ctx context.Context) { <-ctx.Done() }`, "channel receive"},
		{"range over a channel", x, `import "context"; func f(ctx context.Context) { for range ctx.Done() {} }`, "channel value"},
		{"select", x, `func f() { select {} }`, "select statement"},
		{"global rand", x, `import "math/rand/v2"; func f() int { return rand.IntN(3) }`, "rand.IntN draws from the global random source"},
		{"global shuffle", x, `import r "math/rand/v2"; func f(s []int) { r.Shuffle(len(s), func(i, j int) {}) }`, "rand.Shuffle draws"},
		{"go-cron scheduler", cron, `import gocron "github.com/netresearch/go-cron"; func f() { gocron.New().Start() }`, "cron.New constructs or runs go-cron's scheduler"},
		{"go-cron AddFunc", cron, `import gocron "github.com/netresearch/go-cron"; func f(c *gocron.Cron) { c.AddFunc("@daily", func() {}) }`, "cron.Cron.AddFunc constructs or runs"},
		{"go-cron bit field", cron, `import gocron "github.com/netresearch/go-cron"; func f(s *gocron.SpecSchedule) uint64 { return s.Minute &^ (1 << 63) }`, "cron.SpecSchedule.Minute reads go-cron's private bit layout"},
		{"go-cron bit field in a literal", cron, `import gocron "github.com/netresearch/go-cron"; var s = gocron.SpecSchedule{Dow: 1}`, "cron.SpecSchedule.Dow reads go-cron's private bit layout"},
		{"go-cron NormalizeDOW", cron, `import gocron "github.com/netresearch/go-cron"; var b = gocron.NormalizeDOW(1)`, "reads go-cron's private bit layout"},
		{"go-cron clock", cron, `import gocron "github.com/netresearch/go-cron"; var a = gocron.AnalyzeSpec("@daily")`, "cron.AnalyzeSpec reads the wall clock"},
		{"go-cron beyond the API", cron, `import gocron "github.com/netresearch/go-cron"; func f(s gocron.Schedule) bool { _, ok := s.(gocron.ConstantDelaySchedule); return ok }`, "cron.ConstantDelaySchedule is not on the allowlist"},

		{"clean time", x, `import "time"; func f(t, u time.Time) bool { return t.After(u) && t.Add(time.Second).Before(u.In(time.UTC)) }`, ""},
		{"clean rand", x, `import "math/rand/v2"; func f() int { return rand.New(rand.NewPCG(1, 2)).IntN(3) }`, ""},
		{"clean context and mutex", x, `import ("context"; "sync"); var mu sync.Mutex; func f(ctx context.Context) error { mu.Lock(); defer mu.Unlock(); return ctx.Err() }`, ""},
		{"clean go-cron parser", cron, `import ("time"; gocron "github.com/netresearch/go-cron")
			var p = gocron.MustNewParser(gocron.Minute | gocron.Hour | gocron.Dom | gocron.Month | gocron.Dow).WithMaxSearchYears(10)
			func f(t time.Time) time.Time { s, err := p.Parse("0 3 * * *"); if err != nil { return time.Time{} }; return s.Next(t) }`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parser.ParseFile(fset, tc.name+".go", "package x\n"+tc.src+"\n", parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			info, err := typeCheck(fset, imp, tc.path, []*ast.File{f})
			if err != nil {
				t.Fatalf("planted source does not type-check: %v", err)
			}
			got := checkFile(fset, info, tc.path, f)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("clean source flagged:\n%s", strings.Join(got, "\n"))
			case tc.want != "" && !strings.Contains(strings.Join(got, "\n"), tc.want):
				t.Errorf("got %q, want a report containing %q", got, tc.want)
			}
		})
	}
}

// TestDepChecksBite runs checkDeps on given dependency graphs.
func TestDepChecksBite(t *testing.T) {
	t.Parallel()
	std := func(path string, imports ...string) *listed {
		return &listed{ImportPath: path, Standard: true, Imports: imports}
	}
	pkg := func(path string, imports ...string) *listed { return &listed{ImportPath: path, Imports: imports} }
	graph := func(ps ...*listed) map[string]*listed {
		m := map[string]*listed{
			"time": std("time", "errors"), "errors": std("errors"), "os": std("os", "errors"),
			"fmt": std("fmt", "os", "errors"), "net/http": std("net/http", "os", "time"),
		}
		for _, p := range ps {
			m[p.ImportPath] = p
		}
		return m
	}
	const core, cron, node = module + "/core/x", module + "/core/cron", module + "/node"
	for _, tc := range []struct {
		name string
		pkgs map[string]*listed
		want []string // substrings of one report; nil for a clean graph
	}{
		{
			name: "third-party import that reaches the clock",
			pkgs: graph(pkg(core, "fmt", "example.com/tick"), pkg("example.com/tick", "time")),
			want: []string{"example.com/tick is a third-party package not on the allowlist", core + " → example.com/tick", "imports time"},
		},
		{
			name: "third-party import behind an allowlisted one",
			pkgs: graph(pkg(cron, goCronPath), pkg(goCronPath, "fmt", "example.com/util"), pkg("example.com/util", "example.com/net"), pkg("example.com/net", "net/http")),
			want: []string{"example.com/util is a third-party package not on the allowlist", cron + " → " + goCronPath + " → example.com/util"},
		},
		{
			name: "the reached package's own third-party import",
			pkgs: graph(pkg(cron, goCronPath), pkg(goCronPath, "example.com/util"), pkg("example.com/util", "example.com/net"), pkg("example.com/net", "net/http")),
			want: []string{"example.com/net is a third-party package", "→ example.com/util → example.com/net", "it or a package behind it imports net/http"},
		},
		{
			name: "allowlisted package imported by another package",
			pkgs: graph(pkg(cron, goCronPath), pkg(node, cron, goCronPath), pkg(goCronPath, "time")),
			want: []string{node + " imports " + goCronPath + ", which only core/cron may import directly"},
		},
		{
			name: "a package above the boundary",
			pkgs: graph(pkg(core, module+"/store/sqlite"), pkg(module+"/store/sqlite", "example.com/driver"), pkg("example.com/driver", "os")),
			want: []string{module + "/store/sqlite is above the boundary but reached from below it: " + core + " → " + module + "/store/sqlite"},
		},
		{
			name: "clean",
			pkgs: graph(pkg(core, "fmt", cron), pkg(cron, "time", goCronPath), pkg(goCronPath, "time", "os", "fmt"), pkg(node, core, "time")),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkDeps(backwave, tc.pkgs, thirdParty, nil, nil)
			if tc.want == nil {
				if len(got) > 0 {
					t.Errorf("clean graph flagged:\n%s", strings.Join(got, "\n"))
				}
				return
			}
			for _, g := range got {
				if containsAll(g, tc.want) {
					return
				}
			}
			t.Errorf("got %q, want a report containing all of %q", got, tc.want)
		})
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestAuditBites runs the whole audit, go list included, on a scratch
// module: one package below its boundary per kind of violation, a clean
// one, and one above the boundary that may do anything.
func TestAuditBites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const scratch = "example.com/scratch"
	files := map[string]string{
		"go.mod": "module " + scratch + "\n\ngo 1.26\n\nrequire example.com/clock v0.0.0\n\nreplace example.com/clock => ./clock\n",
		// A third-party module that reads the clock.
		"clock/go.mod":   "module example.com/clock\n\ngo 1.26\n",
		"clock/clock.go": "package clock\n\nimport \"time\"\n\nfunc Now() time.Time { return time.Now() }\n",
		// Below the boundary.
		"core/clean/clean.go": "package clean\n\nimport \"time\"\n\nfunc Due(now time.Time, d time.Duration) time.Time { return now.Add(d) }\n",
		"core/wall/wall.go":   "package wall\n\nimport \"time\"\n\nfunc Due() time.Time { return time.Now() }\n",
		"core/spawn/spawn.go": "package spawn\n\nfunc Run(f func()) { go f() }\n",
		"core/pipe/pipe.go":   "package pipe\n\nfunc New() chan int { return make(chan int, 1) }\n",
		"core/wait/wait.go":   "package wait\n\nfunc Forever() { select {} }\n",
		"core/dep/dep.go":     "package dep\n\nimport \"example.com/clock\"\n\nvar Now = clock.Now\n",
		"core/file/file.go":   "package file\n\nimport \"os\"\n\nvar Args = os.Args\n",
		"core/up/up.go":       "package up\n\nimport \"" + scratch + "/shell\"\n\nvar Run = shell.Run\n",
		// Above the boundary.
		"shell/shell.go": "package shell\n\nimport \"os\"\n\nfunc Run() { go os.Exit(0) }\n",
	}
	for name, src := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := layout{module: scratch, pure: []string{"core"}}
	got, err := audit(dir, []string{"GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	report := strings.Join(got, "\n")
	for _, want := range [][]string{
		{scratch + "/core/wall/wall.go:5:", "time.Now reads or waits on the wall clock"},
		{scratch + "/core/spawn/spawn.go:3:", "starts a goroutine"},
		{scratch + "/core/pipe/pipe.go:3:", "channel type"},
		{scratch + "/core/wait/wait.go:3:", "select statement"},
		{"example.com/clock is a third-party package not on the allowlist", scratch + "/core/dep → example.com/clock", "it or a package behind it imports time", "example.com/clock/clock.go:5:", "time.Now reads"},
		{scratch + "/core/file imports os"},
		{scratch + "/shell is above the boundary but reached from below it: " + scratch + "/core/up → " + scratch + "/shell"},
	} {
		found := false
		for _, g := range got {
			found = found || containsAll(g, want)
		}
		if !found {
			t.Errorf("no report containing all of %q in:\n%s", want, report)
		}
	}
	if strings.Contains(report, "core/clean") || strings.Contains(report, "shell/shell.go") {
		t.Errorf("the clean package or the package above the boundary was flagged:\n%s", report)
	}
	if len(got) != 7 {
		t.Errorf("%d reports, want 7:\n%s", len(got), report)
	}
}

// TestLayout checks the classification of this module's packages.
func TestLayout(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		module + "/core/cron": true, module + "/store": true, module + "/store/memstore": true,
		module + "/internal/sim": true, module + "/vtime": true, module + "/job": true, module + "/node": true,
		module + "/store/sqlite": false, module + "/store/storetest": false, module + "/store/postgres": false,
		module + "/shell": false, module: false, module + "/internal/boundary": false, "example.com/core": false,
	} {
		if got := backwave.isPure(path); got != want {
			t.Errorf("isPure(%s) = %v, want %v", path, got, want)
		}
	}
}

// TestDocReportBites runs docReport on package docs with and without the
// boundary paragraph, and packageDoc on a scratch package.
func TestDocReportBites(t *testing.T) {
	t.Parallel()
	rewrapped := strings.Join(strings.Fields(Paragraph), "\n")
	for _, tc := range []struct {
		name, doc string
		want      string // a substring of the report; "" for a doc that passes
	}{
		{"no doc", "", "has no package doc"},
		{"no paragraph", "Package x decides things.\n", "lacks the determinism boundary paragraph"},
		{"a word changed", "Package x decides things.\n\n" + strings.Replace(Paragraph, "wall clock", "clock", 1), "lacks the determinism boundary paragraph"},
		{"no heading", "Package x decides things.\n\n" + strings.TrimPrefix(Paragraph, "# Determinism boundary"), "lacks the determinism boundary paragraph"},
		{"the paragraph", "Package x decides things.\n\n" + Paragraph + "\n", ""},
		{"rewrapped, with a package's own addition", "Package x decides things.\n\n" + rewrapped + "\n\nNor does it load a zone.\n", ""},
	} {
		got := docReport(tc.doc)
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: flagged: %s", tc.name, got)
		case !strings.Contains(got, tc.want):
			t.Errorf("%s: got %q, want a report containing %q", tc.name, got, tc.want)
		}
	}

	dir := t.TempDir()
	files := map[string]string{
		"a.go": "// Package x decides things.\n//\n// " + strings.ReplaceAll(Paragraph, "\n", "\n// ") + "\npackage x\n",
		"b.go": "package x\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(src, "// \n", "//\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		files []string
		clean bool
	}{{[]string{"a.go", "b.go"}, true}, {[]string{"b.go"}, false}} {
		doc, err := packageDoc(&listed{ImportPath: "x", Dir: dir, GoFiles: tc.files})
		if err != nil {
			t.Fatal(err)
		}
		if got := docReport(doc); (got == "") != tc.clean {
			t.Errorf("files %v: report %q, want clean %v", tc.files, got, tc.clean)
		}
	}
}
