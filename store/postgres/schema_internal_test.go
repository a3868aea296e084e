package postgres

import (
	"strings"
	"testing"
)

// statements lists every statement the package writes against the literal
// schema, migrations included.
func statements() []string {
	out := []string{insertSQL, claimLockSQL, claimSQL, renewSQL, reportSQL, expireSQL, relinquishSQL,
		queueSetSQL, queueListSQL, countsSQL, foldSQL, headSQL, logOneSQL, auditSQL, `LISTEN ` + hintChannel}
	for _, m := range migrations() {
		out = append(out, m.sql)
	}
	return out
}

// Glossary, Schema Name: "The adapters author every query and DDL script
// against the literal backwave and rename it at one choke point, so the
// default emits byte-identical SQL."
func TestSchemaChokePoint(t *testing.T) {
	t.Parallel()
	def := &Store{schema: DefaultSchema}
	other := &Store{schema: "tenant_jobs"}
	for _, q := range statements() {
		if !strings.Contains(q, "backwave.") {
			t.Errorf("statement does not name the literal schema:\n%s", q)
		}
		if got := def.sql(q); got != q {
			t.Errorf("default schema changed the statement:\n%s\n→\n%s", q, got)
		}
		r := other.sql(q)
		if schemaWord.MatchString(r) {
			t.Errorf("renamed statement still names backwave:\n%s", r)
		}
		if strings.Count(r, "tenant_jobs") != len(schemaWord.FindAllString(q, -1)) {
			t.Errorf("rename did not replace every occurrence:\n%s", r)
		}
		if other.sql(q) != r {
			t.Error("a cached rename differs from the first")
		}
	}
}

func TestSchemaNameValidation(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"":            true, // the default
		"backwave":    true,
		"jobs_2":      true,
		"_private":    true,
		"Jobs":        false, // would need quoting
		"2jobs":       false,
		"jobs-x":      false,
		"jobs.x":      false,
		`jobs"; drop`: false,
		"pg_jobs":     false, // reserved prefix
		"pg_catalog":  false,
		"pg_toast":    false,
		// A plain pg_dump leaves information_schema out (issue 38, hole 3).
		"information_schema": false,
		"mysql":              false,
		"a_very_long_name_that_goes_on_and_on_past_the_limit_of_sixty_three": false,
	} {
		_, err := checkSchema(name)
		if (err == nil) != ok {
			t.Errorf("checkSchema(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
