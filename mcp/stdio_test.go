package mcp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store/sqlite"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioChildEnv, when set to a SQLite file's path, makes the test binary
// the stdio server over that file instead of running tests: the form of
// "backwave mcp --db URI", driven by a parent test through the SDK's
// CommandTransport.
const stdioChildEnv = "BACKWAVE_MCP_TEST_STDIO_DB"

// stdioChildActor is the Actor the child records on writes.
const stdioChildActor = "cli:child"

func TestMain(m *testing.M) {
	if path := os.Getenv(stdioChildEnv); path != "" {
		if err := runStdioChild(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runStdioChild(path string) error {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := NewServer(st, Options{Policy: grant(stdioChildActor, permission.View, permission.Requeue)})
	if err != nil {
		return err
	}
	return srv.RunStdio(ctx)
}

// A subprocess serving stdio over a SQLite file, as the command-line tool
// does: the parent lists and calls tools through the SDK's client, and the
// write it is allowed lands in the file's audit trail with the child's
// Actor, while one it is not allowed is refused.
func TestStdioSubprocess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	f := newFixtureOn(t, st)

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), stdioChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "mcptest", Version: "v0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the stdio session: %v", err)
		}
	}()

	if got := toolNames(t, cs); len(got) != 22 {
		t.Errorf("the child offers %d tools %v, want the 17 reads and the five Requeue writes", len(got), got)
	}
	got := mustCall[jobGetResult](t, cs, "job_get", map[string]any{"id": f.succeeded})
	if got.Job.State != "succeeded" || got.Output != nil || got.Job.Payload != nil {
		t.Errorf("job_get over stdio without ViewSensitiveData: %+v", got)
	}
	before := len(f.audit(t))
	if r := call(t, cs, "job_cancel", map[string]any{"id": f.waiting[0]}); !r.isError {
		t.Errorf("the child cancelled without Cancel: %s", r.structured)
	}
	if n := len(f.audit(t)); n != before {
		t.Errorf("the refused cancel wrote %d audit records", n-before)
	}
	req := mustCall[jobActionResult](t, cs, "job_requeue", map[string]any{"id": f.dead})
	if req.Job.State != "scheduled" || req.Actor != stdioChildActor {
		t.Errorf("job_requeue over stdio: %+v", req)
	}
	entries := f.audit(t)
	if len(entries) != before+1 || entries[0].Actor != stdioChildActor || entries[0].JobID != f.dead {
		t.Errorf("audit after the stdio requeue: %+v", entries)
	}
}
