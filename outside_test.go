package backwave_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutsideModule builds an application outside this module, which imports
// nothing of BackWave but the root package and an adapter
// (testdata/outside/main.go.txt), and runs it: Transactional Enqueue in a
// *sql.Tx on SQLite (and a pgx.Tx on PostgreSQL when
// BACKWAVE_TEST_POSTGRES_URL is set), a rolled-back enqueue that leaves
// nothing, a job read with Client.JobGet and a requeue with a standalone
// Admin. It compiles a program, so -short skips it.
func TestOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: building an outside module takes a while")
	}
	t.Parallel()
	repo, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "outside", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/outside\n\ngo 1.26\n\nrequire github.com/backwave/backwave v0.0.0\n\nreplace github.com/backwave/backwave => " + repo + "\n"
	for name, data := range map[string][]byte{"main.go": src, "go.mod": []byte(mod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = dir
	tidy.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	imports := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".")
	imports.Dir = dir
	out, err := imports.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, "github.com/backwave/backwave/") && !strings.HasPrefix(imp, "github.com/backwave/backwave/store/") {
			t.Errorf("the outside application imports %s: only the root package and adapters should be needed", imp)
		}
	}
	data := t.TempDir()
	run := exec.Command("go", "run", ".", data)
	run.Dir = dir
	got, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the outside application failed: %v\n%s", err, got)
	}
	t.Logf("%s", got)
	if !strings.Contains(string(got), "sqlite: ok") {
		t.Fatalf("output lacks %q:\n%s", "sqlite: ok", got)
	}
	if os.Getenv("BACKWAVE_TEST_POSTGRES_URL") != "" && !strings.Contains(string(got), "postgres: ok") {
		t.Fatalf("output lacks %q:\n%s", "postgres: ok", got)
	}
}
