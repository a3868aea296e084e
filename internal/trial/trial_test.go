package trial_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/modfile"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	_ "github.com/backwave/backwave/store/postgres"
	_ "github.com/backwave/backwave/store/sqlite"
)

// The previous release, until releases are tagged: main as it stood just
// before the newest migration landed (first-parent history), which is
// therefore exactly one schema step behind this checkout. BACKWAVE_TRIAL_RELEASE names another (a tag or a
// commit), e.g. the last release tag. See docs/upgrading.md, "Releasing".
func previousRelease(t *testing.T, repo string) string {
	t.Helper()
	if r := os.Getenv("BACKWAVE_TRIAL_RELEASE"); r != "" {
		return r
	}
	if shallow := strings.TrimSpace(git(t, repo, "rev-parse", "--is-shallow-repository")); shallow == "true" {
		t.Skip("the checkout is shallow: the N-1 trial needs the previous release from the repository's history (git fetch --unshallow)")
	}
	newest := strings.TrimSpace(git(t, repo, "log", "-1", "--first-parent", "--format=%H", "--diff-filter=A", "--", "store/sqlite/migrations", "store/postgres/migration"))
	if newest == "" {
		t.Fatal("no commit added a migration")
	}
	return newest + "^"
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("git %v: %v\n%s", args, err, stderr)
	}
	return string(out)
}

// build compiles testdata/worker.go.txt against the module tree at src.
func build(t *testing.T, src, out string) {
	t.Helper()
	prog, err := os.ReadFile("testdata/worker.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(src, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod, err := workerMod(src)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"main.go": prog, "go.mod": mod, "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The worker's go.mod repeats the tree's requirements, so the module
	// graph stays pruned as the tree's own is: a graph loaded whole would
	// want the go.mod of modules only the dependencies' tests name
	// (testify for pgpassfile, say), which a module cache filled by
	// building this checkout need not hold. For the same reason there is no
	// "go mod tidy", which reads the tests of every dependency: the build,
	// with -mod=mod, adds what the worker's imports need.
	for _, args := range [][]string{{"build", "-o", out, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// Go modules come from the cache, or else from the module proxy
		// like any build's; the toolchain is this one.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v against %s: %v\n%s", args, src, err, b)
		}
	}
}

type fleet struct {
	t    *testing.T
	db   string
	bins map[string]string // "old", "head" → binary
	logs map[string]*bytes.Buffer
}

func (f *fleet) run(version, node string, args ...string) {
	f.t.Helper()
	cmd := exec.Command(f.bins[version], append([]string{"-db", f.db, "-node", node}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("%s %s %v: %v\n%s", version, node, args, err, out)
	}
}

func (f *fleet) start(version, node string) *exec.Cmd {
	f.t.Helper()
	cmd := exec.Command(f.bins[version], "-db", f.db, "-node", node, "work")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	f.logs[version+"/"+node] = &buf
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// stop ends a worker with SIGTERM, waits for its clean exit and returns
// how many Attempts it ran.
func (f *fleet) stop(cmd *exec.Cmd, name string) int {
	f.t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		f.t.Errorf("%s did not stop cleanly: %v\n%s", name, err, f.logs[name])
	}
	var ran int
	for line := range strings.Lines(f.logs[name].String()) {
		if _, err := fmt.Sscanf(line, "ran %d", &ran); err == nil {
			return ran
		}
	}
	f.t.Errorf("%s did not say how many Attempts it ran:\n%s", name, f.logs[name])
	return 0
}

// TestMixedVersionFleet is the N-1 trial (glossary, Mixed-Version Fleet,
// In-Place Upgrade): the previous release creates the schema and works
// jobs on two nodes; this checkout migrates the database while those jobs
// are in flight and joins with two nodes; an old node restarts onto the
// migrated schema and the old release keeps enqueuing. Every job must end
// exactly as on a single-version fleet — Ok and Flaky Succeeded (Flaky at
// Attempt 2), Doomed Dead-Lettered at Attempt 2 — none Quarantined, counts
// exact.
func TestMixedVersionFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the N-1 trial builds two workers and runs processes")
	}
	t.Parallel()
	repo := strings.TrimSpace(git(t, ".", "rev-parse", "--show-toplevel"))
	release := previousRelease(t, repo)
	oldTree := t.TempDir()
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive %q | tar -x -C %q", repo, release, oldTree))
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("extract %s: %v\n%s", release, err, out)
	}
	bins := t.TempDir()
	bin := map[string]string{"old": filepath.Join(bins, "old"), "head": filepath.Join(bins, "head")}
	build(t, oldTree, bin["old"])
	build(t, repo, bin["head"])
	t.Logf("previous release %s", strings.TrimSpace(git(t, repo, "rev-parse", "--short", release)))

	dbs := map[string]string{"sqlite": "sqlite://" + filepath.Join(t.TempDir(), "trial.db")}
	if u := os.Getenv("BACKWAVE_TEST_POSTGRES_URL"); u != "" {
		dbs["postgres"] = withSchema(t, u)
	} else {
		t.Log("BACKWAVE_TEST_POSTGRES_URL is not set: the PostgreSQL trial is skipped")
	}
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := &fleet{t: t, db: db, bins: bin, logs: map[string]*bytes.Buffer{}}
			const batch = 60
			f.run("old", "old-producer", "produce", fmt.Sprint(batch), "before")
			a := f.start("old", "old-a")
			b := f.start("old", "old-b")
			time.Sleep(300 * time.Millisecond)                                     // jobs in flight on the old schema
			f.run("head", "head-producer", "produce", fmt.Sprint(batch), "during") // migrates
			c := f.start("head", "head-c")
			d := f.start("head", "head-d")
			f.stop(a, "old/old-a")
			a = f.start("old", "old-a2") // an old node restarts onto the new schema
			f.run("old", "old-producer", "produce", fmt.Sprint(batch), "after")

			st, err := store.Open(t.Context(), db+sep(db)+"migrate=false")
			if err != nil {
				t.Fatalf("open the migrated store: %v", err)
			}
			t.Cleanup(func() { _ = st.Close() })
			admin, err := backwave.NewAdmin(st, "trial")
			if err != nil {
				t.Fatal(err)
			}
			jobs := waitTerminal(t, admin, 3*batch)
			ran := map[string]int{}
			for _, w := range []struct {
				cmd  *exec.Cmd
				name string
			}{{a, "old/old-a2"}, {b, "old/old-b"}, {c, "head/head-c"}, {d, "head/head-d"}} {
				ran[w.name] = f.stop(w.cmd, w.name)
			}
			t.Logf("Attempts run per node: %v", ran)
			if ran["old/old-a2"] == 0 {
				t.Errorf("the old node restarted onto the migrated schema ran no Attempt: %v", ran)
			}
			if ran["head/head-c"]+ran["head/head-d"] == 0 {
				t.Errorf("the new nodes ran no Attempt: %v", ran)
			}
			counts := map[string]int{}
			for _, j := range jobs {
				want := map[string]struct {
					state   backwave.JobState
					attempt backwave.Attempt
				}{
					"trial_ok":     {backwave.StateSucceeded, 1},
					"trial_flaky":  {backwave.StateSucceeded, 2},
					"trial_doomed": {backwave.StateDeadLettered, 2},
				}[j.WireName]
				if j.State != want.state || j.Attempt != want.attempt {
					t.Errorf("job %d (%s): %s at Attempt %d, want %s at Attempt %d", j.ID, j.WireName, j.State, j.Attempt, want.state, want.attempt)
				}
				counts[j.WireName+"/"+j.State.String()]++
			}
			want := map[string]int{"trial_ok/succeeded": batch, "trial_flaky/succeeded": batch, "trial_doomed/dead_lettered": batch}
			if fmt.Sprint(counts) != fmt.Sprint(want) {
				t.Errorf("end states %v, want %v", counts, want)
			}
			byState, err := admin.CountByState(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			if byState[backwave.StateQuarantined] != 0 || byState[backwave.StateSucceeded] != 2*batch || byState[backwave.StateDeadLettered] != batch {
				t.Errorf("counts by state %v, want %d succeeded, %d dead-lettered, none quarantined", byState, 2*batch, batch)
			}
			if t.Failed() {
				for name, log := range f.logs {
					t.Logf("%s:\n%s", name, log)
				}
			}
		})
	}
}

func sep(uri string) string {
	if strings.Contains(uri, "?") {
		return "&"
	}
	return "?"
}

// withSchema returns the PostgreSQL URI on a fresh schema, dropped at the
// end of the test.
func withSchema(t *testing.T, uri string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bwtrial_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), uri)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	})
	return uri + sep(uri) + "schema=" + schema
}

// waitTerminal polls until n jobs exist and all are terminal, and returns
// them.
func waitTerminal(t *testing.T, admin *backwave.Admin, n int) []backwave.JobInfo {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var all []backwave.JobInfo
		p := backwave.JobListParams{PageParams: backwave.PageParams{Limit: 500}}
		for {
			page, err := admin.Jobs(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page.Items...)
			if page.Next == 0 {
				break
			}
			p.Before = page.Next
		}
		live := 0
		for _, j := range all {
			if !j.State.Terminal() {
				live++
			}
		}
		if len(all) == n && live == 0 {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes: %d jobs, %d still live; want %d, all terminal", len(all), live, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// workerMod returns the go.mod of the worker built against the tree at
// src: it requires that tree (replaced by its directory) and repeats the
// tree's own requirements, so the module graph stays pruned as the tree's is.
func workerMod(src string) ([]byte, error) {
	path := filepath.Join(src, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tree, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		return nil, err
	}
	f := new(modfile.File)
	for _, step := range []func() error{
		func() error { return f.AddModuleStmt("example.com/trialworker") },
		func() error { return f.AddGoStmt("1.26") },
		func() error { return f.AddRequire("github.com/backwave/backwave", "v0.0.0") },
		func() error { return f.AddReplace("github.com/backwave/backwave", "", src, "") },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	for _, r := range tree.Require {
		f.AddNewRequire(r.Mod.Path, r.Mod.Version, r.Indirect)
	}
	return f.Format()
}
