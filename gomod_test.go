package backwave_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// go.mod asks for the language version the module needs (Go 1.26), not a
// patch release: a user on any 1.26 toolchain builds it without a
// toolchain download.
func TestGoModAsksForLanguageVersion(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var directive string
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			directive = strings.TrimSpace(v)
		}
		if strings.HasPrefix(line, "toolchain ") {
			t.Errorf("go.mod pins a toolchain (%q): drop it", line)
		}
	}
	if !regexp.MustCompile(`^1\.26(\.0)?$`).MatchString(directive) {
		t.Errorf("go.mod: go %q, want go 1.26 (the language version, not a patch release)", directive)
	}
}
