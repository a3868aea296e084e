package boundary

import (
	"os"
	"path/filepath"
	"testing"
)

// tagged lists the files below the boundary that a build constraint may
// exclude, with the reason each is the same code on every platform. The
// checks see the files built here; these are their one-constant twins.
var tagged = map[string]string{
	module + "/internal/plant/on.go":       "Enabled = true under -tags backwave_plant, the twin of off.go: one constant, nothing else",
	module + "/internal/invariants/on.go":  "Enabled = true under -race or -tags backwave_invariants, the twin of off.go: one constant, nothing else",
	module + "/internal/invariants/off.go": "Enabled = false outside -race and -tags backwave_invariants, the twin of on.go: one constant, nothing else",
	module + "/node/plant.go":              "the two SetPlant setters of -tags backwave_plant: one field assignment each, nothing else",
	module + "/store/memstore/plant.go":    "Options.SetPlant of -tags backwave_plant: one field assignment, nothing else",
	module + "/internal/sim/plant_on.go":   "the three setter calls of -tags backwave_plant, the twins of plant_off.go's no-ops",
}

// thirdParty lists every package outside the standard library and this
// module that a package below the boundary may reach, with the packages
// allowed to import it directly and the reason it is safe. Anything else
// reachable fails the test with its import chain.
var thirdParty = []allowed{
	{
		path:      "github.com/netresearch/go-cron",
		importers: []string{"core/cron"},
		reason: "a whole scheduler (goroutines, timers, time.Now, logging to os.Stdout), " +
			"allowed for its parser only: core/cron calls the parser and the parsed Schedule's Next " +
			"on times it is given, and nothing else of the package (goCronAPI); no expression it " +
			"parses carries a TZ= prefix, which would load a zone file",
	},
}

// goCronAPI is all of go-cron that core/cron may use, with the reason each
// is pure. Any other use of the package is reported, in particular its
// scheduler (New, Cron and its methods) and the bit fields of SpecSchedule,
// which are its private layout.
var goCronAPI = map[string]string{
	"MustNewParser":             "builds a Parser from constant options",
	"Parser":                    "the parser's type",
	"Parser.Parse":              "parses an expression; reads no clock, and opens no file for an expression without a TZ= prefix",
	"Parser.WithMaxSearchYears": "bounds how far a parsed Schedule's Next searches",
	"ParseOption":               "the type of the parser's options",
	"SecondOptional":            "parser option: optional leading seconds field",
	"Minute":                    "parser option: minute field",
	"Hour":                      "parser option: hour field",
	"Dom":                       "parser option: day-of-month field",
	"Month":                     "parser option: month field",
	"Dow":                       "parser option: day-of-week field",
	"Descriptor":                "parser option: @daily and the like",
	"DowOrDom":                  "parser option: classic day matching when both day fields are restricted",
	"Schedule":                  "the parsed schedule's interface",
	"Schedule.Next":             "documented: the next activation after the given time, computed in that time's zone; reads no clock",
}

// forbiddenImports are packages (and their subpackages) a package below the
// boundary must not import.
var forbiddenImports = []string{
	"net", "os", "database", "syscall", "io/fs", "io/ioutil", "math/rand",
	"crypto/rand", "runtime", "unsafe", "log", "plugin", "C",
	"github.com/jackc", "modernc.org", "github.com/mattn",
}

// allowedImports are exceptions to forbiddenImports: pure parsing, and the
// seedable generators of math/rand/v2 (its global functions are refused
// by forbiddenUse).
var allowedImports = []string{"net/url", "math/rand/v2"}

func TestDeterminismBoundary(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	// The dependency graph comes from go list, which the test cache does not
	// watch: reading go.mod and go.sum makes a changed requirement re-run
	// the test.
	for _, name := range []string{"go.mod", "go.sum"} {
		if _, err := os.ReadFile(filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	findings, err := audit(root, nil, backwave, thirdParty)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
}

// TestPureDocs checks that the package doc of every package below the
// boundary says so, with Paragraph.
func TestPureDocs(t *testing.T) {
	t.Parallel()
	pkgs, err := goList(filepath.Join("..", ".."), nil, backwave.patterns()...)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range sortedKeys(pkgs) {
		p := pkgs[path]
		if p.DepOnly || !backwave.isPure(path) {
			continue
		}
		n++
		doc, err := packageDoc(p)
		if err != nil {
			t.Errorf("%s: %v", path, err)
		} else if r := docReport(doc); r != "" {
			t.Errorf("%s %s", path, r)
		}
	}
	if n < len(backwave.pure) {
		t.Errorf("%d packages below the boundary, fewer than its %d roots", n, len(backwave.pure))
	}
}
