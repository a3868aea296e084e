package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoClosingLinesRunAsPrinted: every command the demo prints at its
// end runs as printed. Each line is split into words by bash, exactly as a
// paste would be (the database path has a space in it, so the quoting is
// tried too), and run in-process; the # lines are comments on lines of
// their own, so no shell passes them to the command as arguments.
func TestDemoClosingLinesRunAsPrinted(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to split the printed lines as a paste would")
	}
	dir := filepath.Join(t.TempDir(), "my demo")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "demo.db")
	var out bytes.Buffer
	if err := runDemo(context.Background(), demoOptions{path: db, duration: 3 * time.Second, out: &out, self: "backwave"}); err != nil {
		t.Fatal(err)
	}
	_, tail, found := strings.Cut(out.String(), "look inside it")
	if !found {
		t.Fatalf("no closing lines:\n%s", out.String())
	}
	var commands, seen []string
	for _, line := range strings.Split(tail, "\n")[1:] {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "# "):
		case strings.HasPrefix(line, "export "):
			got, err := exec.Command(bash, "-c", line+`; printf %s "$BACKWAVE_DB"`).Output()
			if err != nil || string(got) != db {
				t.Errorf("%s: BACKWAVE_DB is %q (%v), want %q", line, got, err, db)
			}
		case strings.HasPrefix(line, "backwave "):
			commands = append(commands, line)
		default:
			t.Errorf("a closing line is neither a command nor a # comment: %q", line)
		}
	}
	for _, line := range commands {
		// Split the line the way a shell reading the pasted line would.
		words, err := exec.Command(bash, "-c", `eval "set -- $1"; for w in "$@"; do printf '%s\0' "$w"; done`, "split", line).Output()
		if err != nil {
			t.Fatalf("split %q: %v", line, err)
		}
		args := strings.Split(strings.TrimSuffix(string(words), "\x00"), "\x00")
		ctx := context.Background()
		if args[1] == "dashboard" {
			// It serves until interrupted: on a free port, for a moment.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			args = append(args, "--addr", "127.0.0.1:0")
		}
		var stdout, stderr bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), &stdout, &stderr)
		if code != 0 {
			t.Errorf("%s\nexited %d: %s", line, code, stderr.String())
			continue
		}
		seen = append(seen, args[1]+" "+args[2])
		if args[1] == "dashboard" && !strings.Contains(stdout.String(), "dashboard: http://127.0.0.1:") {
			t.Errorf("%s printed no URL: %s", line, stdout.String())
		}
	}
	for _, want := range []string{"jobs list", "jobs show", "jobs requeue", "workflows list", "schedules list", "dashboard --db"} {
		if !strings.Contains(strings.Join(seen, "\n"), want) {
			t.Errorf("the closing lines ran no %q command (ran %q)", want, seen)
		}
	}
}
