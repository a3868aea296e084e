package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave/store"
)

// result is one in-process run of the command.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the command line in-process.
func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"backwave"}, args...), strings.NewReader(""), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// ok runs the command and requires success.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := runCLI(t, args...)
	if r.code != 0 {
		t.Fatalf("backwave %q exited %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// TestHelpEverywhere: every command and subcommand answers --help.
func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	var walk func(path []string, cmd *cli.Command)
	walk = func(path []string, cmd *cli.Command) {
		args := append(append([]string{}, path...), "--help")
		out := ok(t, args...)
		if !strings.Contains(out, "USAGE:") {
			t.Errorf("backwave %s: no usage in:\n%s", strings.Join(args, " "), out)
		}
		for _, sub := range cmd.Commands {
			walk(append(append([]string{}, path...), sub.Name), sub)
		}
	}
	walk(nil, newApp(nil, nil))
}

// TestBadInput: bad input gets one line on stderr and a non-zero exit,
// never a stack trace.
func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte("not a database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "jobs.db")
	ok(t, "migrate", "--db", db)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"MissingDirectory", []string{"jobs", "list", "--db", filepath.Join(dir, "no", "such", "jobs.db")}, "does not exist"},
		{"MissingDirectoryURI", []string{"queues", "list", "--db", "sqlite://" + filepath.Join(dir, "nope", "jobs.db")}, "does not exist"},
		{"MissingDirectoryMigrate", []string{"migrate", "--db", filepath.Join(dir, "nope", "jobs.db")}, "does not exist"},
		{"MissingDirectoryDemo", []string{"demo", "--db", filepath.Join(dir, "nope", "jobs.db"), "--for", "1s"}, "does not exist"},
		{"Directory", []string{"jobs", "list", "--db", dir}, "is a directory"},
		{"NotADatabase", []string{"jobs", "list", "--db", notDB}, "not a SQLite database"},
		{"UnknownScheme", []string{"jobs", "list", "--db", "redis://localhost/jobs"}, "unknown URI scheme"},
		{"DemoOnOtherStore", []string{"demo", "--db", "mem://"}, "runs on SQLite"},
		{"MemStore", []string{"queues", "list", "--db", "mem://"}, "vanishes"},
		{"MissingFile", []string{"jobs", "list", "--db", filepath.Join(dir, "missing.db")}, "run: backwave migrate --db "},
		{"InvalidJSON", []string{"enqueue", "--db", db, "--wire-name", "w", "--payload", "{nope"}, "not valid JSON"},
		{"NoWireName", []string{"enqueue", "--db", db}, "--wire-name"},
		{"BadQueue", []string{"enqueue", "--db", db, "--wire-name", "w", "--queue", " padded "}, "queue"},
		{"NoDB", []string{"jobs", "list"}, "needs --db"},
		{"BadState", []string{"jobs", "list", "--db", db, "--state", "failed"}, "not a state"},
		{"BadID", []string{"jobs", "show", "--db", db, "seven"}, "not a job id"},
		{"UnknownJob", []string{"jobs", "show", "--db", db, "7"}, "no such job 7"},
		{"UnknownCommand", []string{"frobnicate"}, "unknown command"},
		{"UnknownFlag", []string{"jobs", "list", "--frob"}, "unknown flag --frob"},
		{"UnknownSubcommand", []string{"jobs", "lst", "--db", db}, `unknown command "lst" for backwave jobs (did you mean "list"? its commands: list, show,`},
		{"BadDuration", []string{"demo", "--for", "soon"}, "invalid"},
		{"NegativeDuration", []string{"demo", "--for", "-1s"}, "negative"},
		{"BadLimit", []string{"queues", "limit", "--db", db, "q", "-3"}, "non-negative"},
		{"MissingQueue", []string{"queues", "pause", "--db", db}, "usage"},
		{"SchemaInURI", []string{"jobs", "list", "--db", "sqlite://" + db + "?schema=a-b"}, "schema name"},
		{"ReplicaOfSQLite", []string{"mcp", "--db", db, "--replica", "postgres://postgres@127.0.0.1:5999/test"}, "--replica is a PostgreSQL standby of a postgres:// --db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, tc.args...)
			if r.code == 0 {
				t.Fatalf("backwave %q succeeded:\n%s", tc.args, r.stdout)
			}
			line := strings.TrimSuffix(r.stderr, "\n")
			if strings.Contains(line, "\n") || !strings.HasPrefix(line, "backwave: ") {
				t.Fatalf("backwave %q: stderr is not one \"backwave: …\" line:\n%s", tc.args, r.stderr)
			}
			if !strings.Contains(line, tc.want) {
				t.Fatalf("backwave %q: %q does not mention %q", tc.args, line, tc.want)
			}
			if strings.Contains(r.stderr+r.stdout, "goroutine ") {
				t.Fatalf("backwave %q printed a stack trace", tc.args)
			}
		})
	}
}

// TestUnreadableFile needs a user that file permissions stop.
func TestUnreadableFile(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("running as root: file permissions do not stop reads")
	}
	path := filepath.Join(t.TempDir(), "jobs.db")
	if err := os.WriteFile(path, nil, 0o000); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "jobs", "list", "--db", path)
	if r.code == 0 || !strings.Contains(r.stderr, "permission denied") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestCommands walks the operator commands over one SQLite file.
func TestCommands(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "jobs.db")
	uri := "sqlite://" + db

	if out := ok(t, "migrate", "--db", db); !strings.Contains(out, "migrated from schema version 0") {
		t.Fatalf("migrate: %s", out)
	}
	if out := ok(t, "migrate", "--db", uri); !strings.Contains(out, "nothing to do") {
		t.Fatalf("migrate again: %s", out)
	}
	id := strings.TrimSpace(ok(t, "enqueue", "--db", uri, "--wire-name", "email.send", "--payload", `{"to":"a@example.com"}`,
		"--queue", "mail", "--max-attempts", "3", "--label", "urgent", "--tag", "tenant=acme", "-q"))
	ok(t, "enqueue", "--db", db, "--wire-name", "report.build", "--delay", "1h")

	var listed []jobView
	if err := json.Unmarshal([]byte(ok(t, "jobs", "list", "--db", db, "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[1].WireName != "email.send" || listed[1].Queue != "mail" || !strings.Contains(string(listed[1].Payload), `"a@example.com"`) ||
		len(listed[1].Tags) != 2 || listed[1].MaxAttempts != 3 {
		t.Fatalf("jobs list --json = %+v", listed)
	}
	if got := ok(t, "jobs", "list", "--db", db, "--queue", "mail", "--state", "scheduled"); !strings.Contains(got, "email.send") || strings.Contains(got, "report.build") {
		t.Fatalf("jobs list --queue mail:\n%s", got)
	}
	if got := ok(t, "jobs", "list", "--db", db, "--state", "succeeded"); !strings.Contains(got, "(no jobs)") {
		t.Fatalf("jobs list --state succeeded:\n%s", got)
	}
	show := ok(t, "jobs", "show", "--db", db, id)
	for _, want := range []string{"email.send", "scheduled", "tenant=acme", "transition log", "insert"} {
		if !strings.Contains(show, want) {
			t.Fatalf("jobs show lacks %q:\n%s", want, show)
		}
	}
	var shown jobView
	if err := json.Unmarshal([]byte(ok(t, "jobs", "show", "--db", db, "--json", id)), &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown.Transitions) != 1 || shown.Transitions[0].State != "scheduled" {
		t.Fatalf("jobs show --json transitions = %+v", shown.Transitions)
	}

	ok(t, "queues", "pause", "--db", db, "mail")
	ok(t, "queues", "limit", "--db", db, "mail", "4")
	var queues []struct {
		Name   string
		Paused bool
		Limit  int
	}
	if err := json.Unmarshal([]byte(ok(t, "queues", "list", "--db", db, "--json")), &queues); err != nil {
		t.Fatal(err)
	}
	if len(queues) != 2 || queues[1].Name != "mail" || !queues[1].Paused || queues[1].Limit != 4 {
		t.Fatalf("queues list = %+v", queues)
	}
	ok(t, "queues", "resume", "--db", db, "mail")
	ok(t, "queues", "limit", "--db", db, "mail", "0")
	if got := ok(t, "queues", "list", "--db", db); !strings.Contains(got, "mail     false   -") {
		t.Fatalf("queues list:\n%s", got)
	}

	if got := ok(t, "jobs", "cancel", "--db", db, id); !strings.Contains(got, "cancelled") {
		t.Fatalf("jobs cancel: %s", got)
	}
	if r := runCLI(t, "jobs", "cancel", "--db", db, id); r.code == 0 || !strings.Contains(r.stderr, "it is cancelled; only scheduled, awaiting-parent or running jobs can be cancelled") {
		t.Fatalf("cancelling a cancelled job: exit %d, %q", r.code, r.stderr)
	}
}

// TestPayloadLimit: a payload from a file or standard input may be as
// large as the store allows (1 MiB, beyond what argv carries), and no
// larger.
func TestPayloadLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "jobs.db")
	body := func(n int) []byte { // a JSON object of exactly n bytes
		return []byte(`{"pad":"` + strings.Repeat("x", n-len(`{"pad":""}`)) + `"}`)
	}
	fits, over := filepath.Join(dir, "fits.json"), filepath.Join(dir, "over.json")
	if err := os.WriteFile(fits, body(store.MaxPayloadBytes), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(over, body(store.MaxPayloadBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ok(t, "enqueue", "--db", db, "--wire-name", "w", "--payload", "@"+fits, "-q"); strings.TrimSpace(got) != "1" {
		t.Fatalf("enqueue of a 1 MiB payload printed %q", got)
	}
	r := runCLI(t, "enqueue", "--db", db, "--wire-name", "w", "--payload", "@"+over)
	if r.code != exitUsage || !strings.Contains(r.stderr, "over the store's 1048576-byte payload limit") {
		t.Fatalf("enqueue of 1 MiB + 1: exit %d, %q", r.code, r.stderr)
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"backwave", "enqueue", "--db", db, "--wire-name", "w", "--payload", "-", "-q"},
		bytes.NewReader(body(store.MaxPayloadBytes)), &out, &errOut)
	if code != exitOK || strings.TrimSpace(out.String()) != "2" {
		t.Fatalf("enqueue of 1 MiB from stdin: exit %d, %q %q", code, out.String(), errOut.String())
	}
}
