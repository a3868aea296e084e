package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mainArgsEnv, when set to a JSON array of arguments, makes the test binary
// run the command with them instead of running tests: how a test starts
// "backwave mcp" as a subprocess speaking on its real stdin and stdout.
const mainArgsEnv = "BACKWAVE_CLI_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if raw := os.Getenv(mainArgsEnv); raw != "" {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(exitError)
		}
		os.Exit(run(context.Background(), append([]string{"backwave"}, args...), os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestMCPStdio starts "backwave mcp" as a subprocess and lists its tools
// with the SDK's client over stdio: the reads alone by default, and the
// write tools --allow grants beside them (docs/mcp.md, the 28 tools).
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "jobs.db")
	ok(t, "enqueue", "--db", db, "--wire-name", "send_email", "--queue", "mail")

	reads := []string{"job_get", "job_transitions", "job_list", "job_retrying", "job_dependencies", "tag_facet", "tag_suggest",
		"count_by_state", "count_by_queue", "queue_list", "schedule_list", "schedule_occurrences", "audit_list",
		"workflow_list", "workflow_get", "queue_keys", "nodes_list"}
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{"read-only", nil, reads},
		{"allow requeue and cancel", []string{"--allow", "requeue,Cancel", "--actor", "agent:test"},
			append(slices.Clone(reads), "job_requeue", "job_cancel", "job_reschedule", "workflow_cancel", "workflow_restart", "workflow_retry", "job_requeue_matching", "job_cancel_matching")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args, err := json.Marshal(append([]string{"mcp", "--db", db}, tc.flags...))
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), mainArgsEnv+"="+string(args))
			cmd.Stderr = os.Stderr
			ctx := context.Background()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "clitest", Version: "v0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := cs.Close(); err != nil {
					t.Errorf("closing the stdio session: %v", err)
				}
			}()
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tool := range res.Tools {
				got = append(got, tool.Name)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("tools = %v\nwant %v", got, want)
			}
			call, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "count_by_queue", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(call.StructuredContent); call.IsError || !json.Valid(b) || !strings.Contains(string(b), `"mail"`) {
				t.Errorf("count_by_queue over stdio: error %v, %s", call.IsError, b)
			}
		})
	}
}

// TestMCPHTTP serves "backwave mcp --http 127.0.0.1:0" in-process, reads
// the address it announces on stderr, and lists the tools with the SDK's
// streamable-HTTP client; cancelling the context stops it cleanly.
func TestMCPHTTP(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "jobs.db")
	ok(t, "migrate", "--db", db)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errR, errW := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"backwave", "mcp", "--db", db, "--http", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, errW)
		_ = errW.Close()
	}()
	lines := bufio.NewScanner(errR)
	if !lines.Scan() {
		t.Fatalf("backwave mcp --http said nothing on stderr (exit %d)", <-code)
	}
	first := lines.Text()
	go func() { // drain the rest of stderr
		for lines.Scan() {
			t.Log(lines.Text())
		}
	}()
	_, rest, found := strings.Cut(first, "serving ")
	url, _, _ := strings.Cut(rest, " ")
	if !found || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/backwave-mcp") {
		t.Fatalf("stderr's first line = %q, want the URL it serves", first)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "clitest", Version: "v0"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 17 {
		t.Errorf("over HTTP, read-only: %d tools, want the 17 reads", len(res.Tools))
	}
	_ = cs.Close()
	cancel()
	if c := <-code; c != exitOK {
		t.Errorf("backwave mcp --http exited %d after its context ended", c)
	}
}
