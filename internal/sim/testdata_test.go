package sim

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backwave/backwave/internal/plant"
)

// TestPlansInTestdata replays every Plan checked in under testdata/: a file
// named NAME--INVARIANT.json must trip that invariant (by identity), a file
// named NAME--ok.json must pass. Checked-in Plans are the regressions the
// Seed Minimizer produced (glossary: Plan, Seed Minimizer).
func TestPlansInTestdata(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no plans in testdata")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		_, want, ok := strings.Cut(name, "--")
		if !ok {
			t.Errorf("%s: name it NAME--INVARIANT.json or NAME--ok.json", file)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !plant.Enabled && bytes.Contains(data, []byte(`"mutation"`)) {
				t.Skip("a planted bug's Plan: planted bugs are compiled in only with -tags backwave_plant")
			}
			p, err := DecodePlan(data)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Run(p)
			var f *Failure
			switch {
			case want == "ok" && err != nil:
				t.Fatalf("want a passing run, got %v", err)
			case want != "ok" && (!errors.As(err, &f) || f.Invariant != want):
				t.Fatalf("want invariant %q, got %v", want, err)
			}
		})
	}
}
