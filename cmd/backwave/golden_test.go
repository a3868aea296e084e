package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/store/mariadb"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt with the output the commands give now")

// TestGolden runs the command-line sessions in testdata/*.txt and compares
// what each command prints with what the file says; -rewrite writes the
// output back instead. A file is a sequence of cases, run in order on one
// temporary directory ($DIR), each a command line and what it gave:
//
//	# A comment, kept as it is.
//	$ backwave jobs list --db $DIR/jobs.db
//	! backwave: sqlite: open $DIR/jobs.db: no such file — run: backwave migrate --db $DIR/jobs.db
//	exit 1
//
// "> " lines are stdout, "! " lines stderr (">" and "!" alone are empty
// lines), and "exit N" the exit status. A command line is split like a
// shell's, with single and double quotes; besides backwave it may be "ls
// PATH" (the names in a directory), "touch PATH" (an empty file), "write
// PATH TEXT" (a file holding TEXT) or "fixture NAME PATH" (see runFixture).
// "backwave … < PATH" gives the command PATH as its standard input. Output
// is normalized before it is compared: the temporary directory reads $DIR,
// a time reads as its layout (YYYY-MM-DD hh:mm:ss.mmm), the schema versions
// this build migrates to as $V, the Go release as $GO, and the way the
// demo says to run this command (selfCommand, which depends on the PATH)
// as backwave. A "$~" line instead
// of "$" compares only the shape of the output, for a command whose numbers
// vary from run to run (the demo): every number reads N, runs of spaces are
// one space, and a line that repeats the line before is dropped.
//
// postgres.txt runs only when BACKWAVE_TEST_POSTGRES_URL names a database;
// $PG is that database with a fresh Schema Name, which reads $SCHEMA.
func TestGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "job_manifest.txt" })
	if len(files) == 0 {
		t.Fatal("no golden files in testdata")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Parallel()
			runGoldenFile(t, file)
		})
	}
}

// goldenCase is one command line of a golden file and what it printed.
type goldenCase struct {
	line  int    // the command's line number in the file, from 1
	shape bool   // "$~": compare the output's shape only
	cmd   string // the command line as written
	// want is the expected output as the file writes it: "> ", "! " and
	// "exit N" lines.
	want []string
}

// goldenFile is a parsed golden file: its lines, with each case's output
// lines replaced by a reference to the case.
type goldenFile struct {
	// text are the lines that are not output: comments, blank lines and
	// command lines (cases[i] is at text[at[i]]).
	text  []string
	at    []int
	cases []goldenCase
}

func parseGolden(t *testing.T, path string) goldenFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f goldenFile
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "$ ") || strings.HasPrefix(line, "$~ "):
			shape, cmd, _ := strings.Cut(line, " ")
			f.at = append(f.at, len(f.text))
			f.text = append(f.text, line)
			f.cases = append(f.cases, goldenCase{line: i + 1, shape: shape == "$~", cmd: cmd})
		case line == ">" || line == "!" || strings.HasPrefix(line, "> ") || strings.HasPrefix(line, "! ") || strings.HasPrefix(line, "exit "):
			if len(f.cases) == 0 {
				t.Fatalf("%s:%d: output before the first command", path, i+1)
			}
			c := &f.cases[len(f.cases)-1]
			c.want = append(c.want, line)
		case line == "" || strings.HasPrefix(line, "#"):
			f.text = append(f.text, line)
		default:
			t.Fatalf("%s:%d: not a comment, a command or an output line: %q", path, i+1, line)
		}
	}
	return f
}

func runGoldenFile(t *testing.T, path string) {
	f := parseGolden(t, path)
	dir := t.TempDir()
	vars := map[string]string{"$DIR": dir}
	var norm normalizer
	norm.add(dir, "$DIR")
	// How the demo tells the user to run this command depends on the PATH.
	if self := selfCommand(); self != "backwave" {
		norm.add(self+" ", "backwave ")
	}
	if filepath.Base(path) == "postgres.txt" {
		url, schema := postgresForGolden(t)
		vars["$PG"] = url
		norm.add(url, "$PG")
		norm.add(schema, "$SCHEMA")
	}
	failed := false
	for i := range f.cases {
		c := &f.cases[i]
		got := norm.output(runGoldenCase(t, c.cmd, vars), c.shape)
		if !slices.Equal(got, c.want) {
			failed = true
			if !*rewrite {
				t.Errorf("%s:%d: %s\n--- want:\n%s\n--- got:\n%s", path, c.line, c.cmd, strings.Join(c.want, "\n"), strings.Join(got, "\n"))
			}
		}
		c.want = got
	}
	if !*rewrite || !failed {
		return
	}
	var out strings.Builder
	next := 0
	for i, line := range f.text {
		out.WriteString(line + "\n")
		if next < len(f.at) && f.at[next] == i {
			for _, w := range f.cases[next].want {
				out.WriteString(w + "\n")
			}
			next++
		}
	}
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote %s", path)
}

// runGoldenCase runs one command line and renders what it printed as
// golden output lines.
func runGoldenCase(t *testing.T, line string, vars map[string]string) []string {
	t.Helper()
	args, err := splitCommand(line)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	for i, a := range args {
		for k, v := range vars {
			a = strings.ReplaceAll(a, k, v)
		}
		args[i] = a
	}
	var stdout, stderr bytes.Buffer
	var stdin io.Reader = strings.NewReader("")
	if n := len(args); n > 2 && args[n-2] == "<" {
		b, err := os.ReadFile(args[n-1])
		if err != nil {
			t.Fatal(err)
		}
		stdin, args = bytes.NewReader(b), args[:n-2]
	}
	code := 0
	switch args[0] {
	case "backwave":
		code = run(context.Background(), args, stdin, &stdout, &stderr)
	case "ls":
		entries, err := os.ReadDir(args[1])
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			fmt.Fprintln(&stdout, e.Name())
		}
	case "fixture":
		runFixture(t, args[1], args[2])
	case "write":
		if err := os.WriteFile(args[1], []byte(args[2]), 0o600); err != nil {
			t.Fatal(err)
		}
	case "touch":
		if err := os.WriteFile(args[1], nil, 0o600); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("%q: unknown command %q", line, args[0])
	}
	var out []string
	for _, s := range []struct {
		prefix string
		text   string
	}{{">", stdout.String()}, {"!", stderr.String()}} {
		if s.text == "" {
			continue
		}
		for l := range strings.SplitSeq(strings.TrimSuffix(s.text, "\n"), "\n") {
			if l == "" {
				out = append(out, s.prefix)
			} else {
				out = append(out, s.prefix+" "+l)
			}
		}
	}
	return append(out, "exit "+strconv.Itoa(code))
}

// splitCommand splits a command line into words the way a shell would,
// with single and double quotes (no escapes, no expansion).
func splitCommand(line string) ([]string, error) {
	var (
		words []string
		word  strings.Builder
		quote rune
		in    bool
	)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, word.String())
				word.Reset()
				in = false
			}
		default:
			word.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if in {
		words = append(words, word.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return words, nil
}

// normalizer rewrites what varies between runs into placeholders.
type normalizer struct {
	literal []string // pairs: text, placeholder
}

func (n *normalizer) add(text, placeholder string) { n.literal = append(n.literal, text, placeholder) }

var (
	// A time as stamp writes it, optionally with a zone offset (zoned).
	tableStamp = regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{3})?( [-+]\d{2}:\d{2})?`)
	// A time as stampJSON writes it.
	jsonTime = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[-+]\d{2}:\d{2})`)
	// The schema version this build migrates to, where the commands print it.
	schemaVersion = regexp.MustCompile(`(version |–|, )(` + strconv.Itoa(sqlite.LatestSchemaVersion()) + `|` + strconv.Itoa(postgres.SchemaVersion()) + `|` + strconv.Itoa(mariadb.SchemaVersion()) + `)\b`)
	// allApplied is the applied list of a migration from nothing to $V
	// (after schemaVersion): 1–$V, or 1–12, $V while a version between is
	// another branch's, not yet embedded.
	allApplied = regexp.MustCompile(`\(applied 1(?:[–, ]+\d+)*[–, ]+\$V\)`)
	goRelease  = regexp.MustCompile(`\bgo1\.\d+(\.\d+)?\S*`)
	number     = regexp.MustCompile(`\d+(\.\d+)?`)
	spaces     = regexp.MustCompile(` {2,}`)
)

// output normalizes golden output lines; shape keeps only their shape.
func (n *normalizer) output(lines []string, shape bool) []string {
	var out []string
	for _, l := range lines {
		for i := 0; i < len(n.literal); i += 2 {
			l = strings.ReplaceAll(l, n.literal[i], n.literal[i+1])
		}
		l = tableStamp.ReplaceAllStringFunc(l, func(s string) string {
			mask := "YYYY-MM-DD hh:mm:ss"
			if len(s) == len("2006-01-02 15:04:05.000") || len(s) == len("2006-01-02 15:04:05.000 -07:00") {
				mask += ".mmm"
			}
			if strings.Count(s, " ") == 2 {
				mask += " ±hh:mm"
			}
			return mask
		})
		l = jsonTime.ReplaceAllString(l, "RFC3339")
		if strings.Contains(l, "version") || strings.Contains(l, "applied") {
			// only where a schema version is spoken of: "running, 5 members"
			// is no version even when 5 is one adapter's
			l = schemaVersion.ReplaceAllString(l, "${1}$$V")
		}
		l = allApplied.ReplaceAllString(l, "(applied 1–$$V)")
		l = goRelease.ReplaceAllString(l, "$$GO")
		if shape && !strings.HasPrefix(l, "exit ") {
			l = spaces.ReplaceAllString(number.ReplaceAllString(l, "N"), " ")
			if len(out) > 0 && out[len(out)-1] == l {
				continue
			}
		}
		out = append(out, l)
	}
	return out
}

// postgresForGolden returns the test database with a fresh Schema Name,
// dropped after the test, or skips the test without one.
func postgresForGolden(t *testing.T) (url, schema string) {
	base := os.Getenv("BACKWAVE_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("BACKWAVE_TEST_POSTGRES_URL is not set")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema = "cli_golden_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer func() { _ = conn.Close(context.Background()) }()
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "schema=" + schema, schema
}
