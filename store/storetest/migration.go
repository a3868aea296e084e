package storetest

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
)

// The migration clauses: what a Storage Adapter's embedded migrations must
// be so that a Mixed-Version Fleet keeps working through an In-Place
// Upgrade. Glossary, Mixed-Version Fleet: "nodes one release behind must
// keep working against the upgraded schema"; In-Place Upgrade: "while jobs
// remain in flight — no drain, no maintenance window"; Schema Re-baseline:
// "After the first release, additive-first binds".
//
// Each migration declares, in one header line, whether code one release
// behind can run on the schema it leaves:
//
//	-- compat: n-1       the previous release keeps working on it
//	-- compat: breaking  it does not (a contract step, or anything else
//	                     the lint below refuses in an n-1 migration)
//
// A migration marked n-1 is additive (expand first, contract in a later
// release): it creates tables, columns, indexes, functions and triggers,
// and backfills rows, but never drops or renames a table, column, index or
// constraint, never changes a column's type, never adds a NOT NULL column
// without a default, a constraint, or a unique index to a table that
// already exists (a write of the previous release could violate it), and
// never deletes rows. Replacing a trigger (DROP TRIGGER and CREATE TRIGGER
// of the same name in one migration) is allowed.
//
// Every migration, whatever its mark, avoids DDL that blocks the job
// tables for as long as it runs: it never rewrites an existing table (a
// column type change, a column added with a volatile default), and on an
// adapter that can build an index without blocking writes
// (MigrationRules.IndexStep), an index on an existing table is an index
// step, built after the migration's transaction and never unique.

// Migration is one embedded migration as the lint reads it: the file's text
// and what the adapter's runner made of it.
type Migration struct {
	// Name names the migration in findings, e.g. "0002_monitor_operator".
	Name string
	// SQL is the file's text.
	SQL string
	// Compat is the mark the runner parsed: "n-1" or "breaking".
	Compat string
	// Body is the text the runner applies in the migration's transaction.
	Body string
	// Steps are the statements the runner applies after that transaction
	// commits, one at a time: the index steps.
	Steps []string
}

// MigrationRules are an adapter's dialect facts the lint needs.
type MigrationRules struct {
	// IndexStep is the prefix of an index step, an index built without
	// blocking writes outside the migration's transaction ("CREATE INDEX
	// CONCURRENTLY IF NOT EXISTS" on PostgreSQL). Empty if the engine has
	// none (SQLite: every statement holds the file's write lock anyway).
	IndexStep string
}

// Compatibility marks.
const (
	CompatN1       = "n-1"
	CompatBreaking = "breaking"
)

// CheckMigrations fails t with every finding of MigrationFindings.
func CheckMigrations(t *testing.T, ms []Migration, rules MigrationRules) {
	t.Helper()
	if len(ms) == 0 {
		t.Fatal("storetest: no migrations to check")
	}
	for _, f := range MigrationFindings(ms, rules) {
		t.Error(f)
	}
}

// CheckLint is a self-test of the lint over an adapter's dialect: it fails
// t unless the lint passes every statement of additive and refuses every
// one of refused, each alone in a migration marked n-1 that parse (the
// adapter's own reading of a migration file) turns into a Migration. A
// migration parse refuses counts as refused.
func CheckLint(t *testing.T, rules MigrationRules, parse func(text string) (Migration, error), additive, refused []string) {
	t.Helper()
	for _, sql := range append(slices.Clone(additive), refused...) {
		var got []string
		m, err := parse("-- compat: " + CompatN1 + "\n" + sql)
		if err != nil {
			got = []string{err.Error()}
		} else {
			got = MigrationFindings([]Migration{m}, rules)
		}
		if bad := slices.Contains(refused, sql); (len(got) > 0) != bad {
			t.Errorf("%s\nfindings %q, want refused=%v", sql, got, bad)
		}
	}
}

// CheckSchemaTooNew fails t unless err, what a build knowing schema
// versions up to known answered for a schema at found, wraps
// store.ErrSchemaTooNew on one line naming both versions.
func CheckSchemaTooNew(t *testing.T, what string, err error, found, known int) {
	t.Helper()
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("%s on version %d: %v, want ErrSchemaTooNew", what, found, err)
	}
	for _, want := range []string{fmt.Sprintf("version %d", found), fmt.Sprintf("version %d", known)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not name %s", what, err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: error is not one line: %q", what, err)
	}
}

// MigrationFindings lints migrations against the clauses above and returns
// one line per violation, naming the migration and the statement.
func MigrationFindings(ms []Migration, rules MigrationRules) []string {
	var out []string
	for _, m := range ms {
		l := lint{m: m, rules: rules}
		l.check()
		out = append(out, l.findings...)
	}
	return out
}

var (
	compatLine     = regexp.MustCompile(`(?m)^-- compat: *(\S*)\s*$`)
	createTable    = regexp.MustCompile(`^CREATE TABLE (?:IF NOT EXISTS )?(\S+)`)
	createIndex    = regexp.MustCompile(`^CREATE (UNIQUE )?INDEX (?:CONCURRENTLY )?(?:IF NOT EXISTS )?\S+ ON (?:ONLY )?([^\s(]+)`)
	createTrigger  = regexp.MustCompile(`^CREATE (?:OR REPLACE )?TRIGGER (\S+)`)
	dropTrigger    = regexp.MustCompile(`^DROP TRIGGER (?:IF EXISTS )?(\S+)`)
	alterTable     = regexp.MustCompile(`^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?(\S+) (.*)$`)
	deleteFrom     = regexp.MustCompile(`^DELETE FROM (\S+)`)
	dropWord       = regexp.MustCompile(`\bDROP (\w+)`)
	volatileCall   = regexp.MustCompile(`\b(CLOCK_TIMESTAMP|RANDOM|GEN_RANDOM_UUID|UUID_GENERATE_V4|NEXTVAL|TIMEOFDAY|STATEMENT_TIMESTAMP)\s*\(`)
	typeChange     = regexp.MustCompile(`^ALTER (?:COLUMN )?\S+ (?:SET DATA )?TYPE\b`)
	constraintWord = regexp.MustCompile(`^ADD (CONSTRAINT|PRIMARY|UNIQUE|CHECK|FOREIGN|EXCLUDE)\b`)
)

// lint checks one migration.
type lint struct {
	m        Migration
	rules    MigrationRules
	findings []string
	created  map[string]bool // tables this migration creates
	triggers map[string]bool // triggers it creates
}

func (l *lint) addf(format string, args ...any) {
	l.findings = append(l.findings, l.m.Name+": "+fmt.Sprintf(format, args...))
}

func (l *lint) check() {
	marks := compatLine.FindAllStringSubmatch(l.m.SQL, -1)
	switch {
	case len(marks) != 1:
		l.addf("has %d \"-- compat:\" lines, want exactly one (%s or %s)", len(marks), CompatN1, CompatBreaking)
	case marks[0][1] != CompatN1 && marks[0][1] != CompatBreaking:
		l.addf("compat %q: want %s or %s", marks[0][1], CompatN1, CompatBreaking)
	case marks[0][1] != l.m.Compat:
		l.addf("the runner read compat %q, the file says %q", l.m.Compat, marks[0][1])
	}
	all := Statements(l.m.SQL)
	body := Statements(l.m.Body)
	var steps []string
	for _, s := range l.m.Steps {
		steps = append(steps, Statements(s)...)
	}
	if got := append(slices.Clone(body), steps...); !sameStatements(got, all) {
		l.addf("the runner's transaction and index steps do not hold exactly the file's statements")
	}
	l.created, l.triggers = map[string]bool{}, map[string]bool{}
	for _, s := range all {
		if m := createTable.FindStringSubmatch(s); m != nil {
			l.created[m[1]] = true
		}
		if m := createTrigger.FindStringSubmatch(s); m != nil {
			l.triggers[m[1]] = true
		}
	}
	seenStep := false
	for _, s := range all {
		isStep := slices.Contains(steps, s)
		if !isStep && seenStep {
			l.addf("statement after an index step (index steps run after the transaction, so they come last): %s", short(s))
		}
		seenStep = seenStep || isStep
		l.blocking(s, isStep)
		if l.m.Compat == CompatN1 {
			l.additive(s)
		}
	}
}

// blocking checks the rule every migration keeps: no DDL that blocks an
// existing table for as long as it runs.
func (l *lint) blocking(s string, isStep bool) {
	if step := strings.ToUpper(l.rules.IndexStep); step != "" {
		switch {
		case isStep && !strings.HasPrefix(s, step+" "):
			l.addf("index step does not start with %s: %s", step, short(s))
		case !isStep && strings.HasPrefix(s, step+" "):
			l.addf("index step inside the migration's transaction: %s", short(s))
		}
		if m := createIndex.FindStringSubmatch(s); m != nil {
			switch {
			case isStep && m[1] != "":
				l.addf("unique index as an index step (it enforces nothing until built, and a failed build leaves it half there): %s", short(s))
			case !isStep && !l.created[m[2]]:
				l.addf("index on existing table %s built inside the migration's transaction, blocking writes for the whole build; make it an index step (%s): %s",
					m[2], step, short(s))
			}
		}
	}
	m := alterTable.FindStringSubmatch(s)
	if m == nil || l.created[m[1]] {
		return
	}
	for _, action := range topLevelSplit(m[2]) {
		switch {
		case typeChange.MatchString(action):
			l.addf("changes a column's type on existing table %s, rewriting it under an exclusive lock: %s", m[1], short(s))
		case strings.HasPrefix(action, "ADD ") && strings.Contains(action, " DEFAULT ") && volatileCall.MatchString(action):
			l.addf("adds a column with a volatile default to existing table %s, rewriting it under an exclusive lock: %s", m[1], short(s))
		}
	}
}

// additive checks what an n-1 migration may not do.
func (l *lint) additive(s string) {
	if strings.Contains(" "+s+" ", " RENAME ") {
		l.addf("n-1 migration renames (code one release behind still uses the old name): %s", short(s))
	}
	if strings.HasPrefix(s, "TRUNCATE ") {
		l.addf("n-1 migration truncates a table: %s", short(s))
	}
	if m := deleteFrom.FindStringSubmatch(s); m != nil && !l.created[m[1]] {
		l.addf("n-1 migration deletes rows of existing table %s: %s", m[1], short(s))
	}
	if strings.HasPrefix(s, "DROP ") {
		if m := dropTrigger.FindStringSubmatch(s); m == nil || !l.triggers[m[1]] {
			l.addf("n-1 migration drops (contract in a later release, marked %s): %s", CompatBreaking, short(s))
		}
	}
	if m := createIndex.FindStringSubmatch(s); m != nil && m[1] != "" && !l.created[m[2]] {
		l.addf("n-1 migration adds a unique index to existing table %s (a write of the previous release may violate it): %s", m[2], short(s))
	}
	m := alterTable.FindStringSubmatch(s)
	if m == nil || l.created[m[1]] {
		return
	}
	for _, action := range topLevelSplit(m[2]) {
		for _, d := range dropWord.FindAllStringSubmatch(action, -1) {
			if d[1] != "NOT" { // DROP NOT NULL only relaxes
				l.addf("n-1 migration drops %s on existing table %s: %s", strings.ToLower(d[1]), m[1], short(s))
			}
		}
		switch {
		case constraintWord.MatchString(action):
			l.addf("n-1 migration adds a constraint to existing table %s (a write of the previous release may violate it): %s", m[1], short(s))
		case strings.HasPrefix(action, "ADD "):
			col := " " + action + " "
			if strings.Contains(col, " NOT NULL ") && !strings.Contains(col, " DEFAULT ") {
				l.addf("n-1 migration adds a NOT NULL column without a default to existing table %s (inserts of the previous release omit it): %s", m[1], short(s))
			}
			if strings.Contains(col, " UNIQUE ") || strings.Contains(col, " PRIMARY KEY ") || strings.Contains(col, " REFERENCES ") {
				l.addf("n-1 migration adds a constrained column to existing table %s: %s", m[1], short(s))
			}
		case strings.HasPrefix(action, "ALTER ") && strings.Contains(action, " SET NOT NULL"):
			l.addf("n-1 migration makes a column of existing table %s NOT NULL: %s", m[1], short(s))
		}
	}
}

// Statements splits SQL text into its statements, each upper-cased with
// whitespace collapsed, comments dropped and string literals and
// dollar-quoted bodies emptied, so that a word in a function body or a
// string is never read as DDL. A SQLite trigger's
// BEGIN … END is one statement.
func Statements(text string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		s := strings.Join(strings.Fields(strings.ToUpper(cur.String())), " ")
		cur.Reset()
		if s == "" {
			return
		}
		// A SQLite trigger body holds semicolons: keep gluing until END.
		if n := len(out); n > 0 && strings.HasPrefix(out[n-1], "CREATE TRIGGER ") &&
			strings.Contains(out[n-1], " BEGIN ") && !strings.HasSuffix(out[n-1], " END") {
			out[n-1] += "; " + s
			return
		}
		out = append(out, s)
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '-' && strings.HasPrefix(text[i:], "--"):
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				j = len(text) - i
			}
			i += j
			cur.WriteByte(' ')
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			j := strings.Index(text[i+2:], "*/")
			if j < 0 {
				j = len(text) - i - 4
			}
			i += j + 3
			cur.WriteByte(' ')
		case c == '\'':
			for i++; i < len(text); i++ {
				if text[i] == '\'' {
					if i+1 < len(text) && text[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
			cur.WriteString("''")
		case c == '$':
			tag := dollarTag(text[i:])
			if tag == "" {
				cur.WriteByte(c)
				continue
			}
			j := strings.Index(text[i+len(tag):], tag)
			if j < 0 {
				j = len(text) - i - 2*len(tag)
			}
			i += len(tag) + j + len(tag) - 1
			cur.WriteString("$$")
		case c == ';':
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// dollarTag returns the dollar-quote opening s starts with ($$ or $tag$),
// or "" if it starts with none (a positional parameter such as $1).
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '$':
			return s[:j+1]
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 1 && c >= '0' && c <= '9':
		default:
			return ""
		}
	}
	return ""
}

// topLevelSplit splits an ALTER TABLE's action list on the commas outside
// parentheses.
func topLevelSplit(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

func sameStatements(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// short cuts a statement for a finding.
func short(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// Environment of an adapter's migration stall measurement: it runs only
// when StallEnv is set, being minutes long, on a job table of StallJobsEnv
// jobs (1,000,000 when unset).
const (
	StallEnv     = "BACKWAVE_MIGRATION_STALL"
	StallJobsEnv = "BACKWAVE_MIGRATION_STALL_JOBS"
)

// StallJobs skips t unless StallEnv is set, and returns the number of jobs
// to measure on.
func StallJobs(t *testing.T) int {
	t.Helper()
	if os.Getenv(StallEnv) == "" {
		t.Skipf("%s is not set: set it to 1 to measure how long each migration stalls claims and reports on a large job table (takes minutes)", StallEnv)
	}
	v := os.Getenv(StallJobsEnv)
	if v == "" {
		return 1_000_000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1000 {
		t.Fatalf("%s=%q: want a number of jobs, at least 1000", StallJobsEnv, v)
	}
	return n
}

// StallTimeline measures an In-Place Upgrade: the operations of a drain
// running beside the migrations (claims and reports, each timed) and the
// window of each migration, so that Report can say how long the longest
// operation overlapping each window took — how long the migration stalled
// the drain. It is safe for concurrent use.
type StallTimeline struct {
	mu      sync.Mutex
	ops     []stallSpan
	windows []stallWindow
}

type stallSpan struct {
	start, end time.Time
	failed     bool
}

type stallWindow struct {
	name       string
	start, end time.Time
}

// Op records one drain operation that began at start and has just ended,
// failed if err is not nil.
func (tl *StallTimeline) Op(start time.Time, err error) {
	end := time.Now()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.ops = append(tl.ops, stallSpan{start: start, end: end, failed: err != nil})
}

// Window runs fn as the window called name and returns its error.
func (tl *StallTimeline) Window(name string, fn func() error) error {
	start := time.Now()
	err := fn()
	end := time.Now()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.windows = append(tl.windows, stallWindow{name: name, start: start, end: end})
	return err
}

// Report returns one line per window: its length, the drain operations
// that overlapped it, how many failed, and the longest of them.
func (tl *StallTimeline) Report() []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []string
	for _, w := range tl.windows {
		var n, failed int
		var longest time.Duration
		for _, op := range tl.ops {
			if op.start.Before(w.end) && op.end.After(w.start) {
				n++
				longest = max(longest, op.end.Sub(op.start))
				if op.failed {
					failed++
				}
			}
		}
		out = append(out, fmt.Sprintf("%-32s %8.0f ms   drain ops %6d (failed %d)   longest claim/report %7.1f ms",
			w.name, ms(w.end.Sub(w.start)), n, failed, ms(longest)))
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
