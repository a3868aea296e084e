// Package backwavetest holds helpers for BackWave users' own tests.
//
// The Job Manifest (CheckManifest) is a committed snapshot of every
// registered Wire Name: a Wire Name is a job type's identity in storage, so
// adding, removing or renaming one is a reviewed, deliberate act that shows
// in the pull request's diff instead of being discovered in production
// (glossary, Wire Name; Job Manifest).
package backwavetest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/backwave/backwave"
)

// UpdateEnv names the environment variable that makes CheckManifest write
// the manifest instead of comparing: BACKWAVE_UPDATE_MANIFEST=1 go test ./...
const UpdateEnv = "BACKWAVE_UPDATE_MANIFEST"

const header = "# BackWave Job Manifest: every registered Wire Name, one per line.\n" +
	"# Changing a Wire Name strands the jobs stored under the old one (they are Quarantined).\n" +
	"# Regenerate with " + UpdateEnv + "=1 go test after a deliberate change.\n"

// CheckManifest compares the Wire Names registered in h with the manifest
// file at path and fails t with a readable diff when one was added,
// removed or renamed. With UpdateEnv set to 1 it writes the file instead.
// A missing file fails with the command that creates it.
func CheckManifest(t testing.TB, h *backwave.Handlers, path string) {
	t.Helper()
	got := h.WireNames()
	if os.Getenv(UpdateEnv) == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("job manifest: %v", err)
		}
		if err := os.WriteFile(path, []byte(Render(got)), 0o644); err != nil {
			t.Fatalf("job manifest: %v", err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("job manifest %s does not exist; create it with %s=1 go test", path, UpdateEnv)
	}
	if err != nil {
		t.Fatalf("job manifest: %v", err)
	}
	if d := Diff(Parse(string(data)), got); d != "" {
		t.Fatalf("the registered Wire Names differ from the Job Manifest %s:\n%s\n"+
			"A renamed Wire Name strands every stored job of the old name. If the change is deliberate, "+
			"regenerate the manifest with %s=1 go test and commit it.", path, d, UpdateEnv)
	}
}

// Render is the manifest text of the Wire Names.
func Render(wireNames []string) string {
	names := slices.Clone(wireNames)
	slices.Sort(names)
	return header + strings.Join(names, "\n") + "\n"
}

// Parse reads a manifest: one Wire Name a line; blank lines and lines
// starting with # are ignored.
func Parse(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimRight(line, "\r"); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	slices.Sort(out)
	return out
}

// Diff lists what changed from the committed Wire Names to the registered
// ones: "+ name" added, "- name" removed; a rename shows as one of each.
// It returns "" when they are the same.
func Diff(committed, registered []string) string {
	var sb strings.Builder
	for _, n := range committed {
		if !slices.Contains(registered, n) {
			fmt.Fprintf(&sb, "- %s   (in the manifest, no longer registered)\n", n)
		}
	}
	for _, n := range registered {
		if !slices.Contains(committed, n) {
			fmt.Fprintf(&sb, "+ %s   (registered, not in the manifest)\n", n)
		}
	}
	return sb.String()
}
