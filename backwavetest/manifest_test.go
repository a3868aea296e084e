package backwavetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/backwavetest"
)

type mailArgs struct{}

func (mailArgs) WireName() string { return "mail.send" }

type reportArgs struct{}

func (reportArgs) WireName() string { return "report.build" }

func handlers(t *testing.T) *backwave.Handlers {
	t.Helper()
	h := backwave.NewHandlers()
	noop := func(context.Context, *backwave.Job[mailArgs]) error { return nil }
	if err := backwave.AddHandlerFunc(h, noop); err != nil {
		t.Fatal(err)
	}
	if err := backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[reportArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return h
}

// Glossary, Job Manifest: changes to Wire Names are "visible in PR diffs":
// a rename shows as one removed and one added name.
func TestDiff(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                  string
		committed, registered []string
		want                  []string
	}{
		{"same", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"added", []string{"a"}, []string{"a", "b"}, []string{"+ b"}},
		{"removed", []string{"a", "b"}, []string{"a"}, []string{"- b"}},
		{"renamed", []string{"mail.send"}, []string{"mail.deliver"}, []string{"- mail.send", "+ mail.deliver"}},
	} {
		d := backwavetest.Diff(c.committed, c.registered)
		lines := strings.Split(strings.TrimSpace(d), "\n")
		if len(c.want) == 0 {
			if d != "" {
				t.Errorf("%s: diff %q, want none", c.name, d)
			}
			continue
		}
		if len(lines) != len(c.want) {
			t.Fatalf("%s: diff %q, want %q", c.name, d, c.want)
		}
		for i, w := range c.want {
			if !strings.HasPrefix(lines[i], w+" ") {
				t.Errorf("%s: line %d = %q, want it to start %q", c.name, i, lines[i], w)
			}
		}
	}
}

func TestRenderParseRoundTrip(t *testing.T) {
	t.Parallel()
	names := []string{"z.last", "a.first"}
	got := backwavetest.Parse(backwavetest.Render(names))
	if strings.Join(got, ",") != "a.first,z.last" {
		t.Fatalf("Parse(Render) = %v", got)
	}
}

// CheckManifest passes on a matching file and fails, with the diff, on a
// stale one.
func TestCheckManifest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manifest.txt")
	if err := os.WriteFile(path, []byte(backwavetest.Render([]string{"mail.send", "report.build"})), 0o644); err != nil {
		t.Fatal(err)
	}
	backwavetest.CheckManifest(t, handlers(t), path)

	if err := os.WriteFile(path, []byte(backwavetest.Render([]string{"mail.send", "report.make"})), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		backwavetest.CheckManifest(rec, handlers(t), path)
	}()
	if !rec.failed || !strings.Contains(rec.msg, "- report.make") || !strings.Contains(rec.msg, "+ report.build") {
		t.Fatalf("stale manifest: failed=%t message %q", rec.failed, rec.msg)
	}

	t.Setenv(backwavetest.UpdateEnv, "1")
	backwavetest.CheckManifest(t, handlers(t), path)
	data, _ := os.ReadFile(path)
	if got := backwavetest.Parse(string(data)); strings.Join(got, ",") != "mail.send,report.build" {
		t.Fatalf("updated manifest holds %v", got)
	}
}

// recorder captures a Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
