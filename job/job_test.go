package job

import (
	"errors"
	"strings"
	"testing"
)

func TestStateNamesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range States {
		got, err := ParseState(s.String())
		if err != nil || got != s {
			t.Errorf("ParseState(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseState("failed"); err == nil {
		t.Error(`ParseState("failed") must fail: there is no such state`)
	}
	for _, c := range []RetryCause{RetryCauseNone, RetryCauseHandlerFailed, RetryCauseLeaseExpired} {
		if got, err := ParseRetryCause(c.String()); err != nil || got != c {
			t.Errorf("ParseRetryCause(%q) = %v, %v", c, got, err)
		}
	}
	for _, c := range []CancelCause{CancelCauseNone, CancelCauseOperator, CancelCauseParentFailure} {
		if got, err := ParseCancelCause(c.String()); err != nil || got != c {
			t.Errorf("ParseCancelCause(%q) = %v, %v", c, got, err)
		}
	}
}

func TestTerminalAndLive(t *testing.T) {
	t.Parallel()
	for _, s := range States {
		if s.Terminal() == s.Live() {
			t.Errorf("%s: Terminal=%t Live=%t; exactly one must hold", s, s.Terminal(), s.Live())
		}
	}
}

// TestTagsAreASet checks the glossary's Tag entry: a set (re-adding is a
// no-op), Labels and Keyed Tags told apart structurally, a colon in a Label
// is data.
func TestTagsAreASet(t *testing.T) {
	t.Parallel()
	tags := NormalizeTags([]Tag{Keyed("variant", "TP53"), Label("urgent"), Keyed("variant", "BRCA1"), Label("urgent"), Label("a:b")})
	want := []Tag{Label("a:b"), Label("urgent"), Keyed("variant", "BRCA1"), Keyed("variant", "TP53")}
	if len(tags) != len(want) {
		t.Fatalf("got %v, want %v", tags, want)
	}
	for i := range want {
		if tags[i] != want[i] {
			t.Fatalf("got %v, want %v", tags, want)
		}
	}
	if !Label("a:b").IsLabel() || Keyed("a", "b").IsLabel() {
		t.Error("a colon in a Label must not make it a Keyed Tag")
	}
	if got := MergeTags(tags, []Tag{Label("urgent")}); len(got) != len(tags) {
		t.Errorf("re-adding an identical tag changed the set: %v", got)
	}
}

func TestTagValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tag Tag
		ok  bool
	}{
		{Label("ok"), true},
		{Keyed("tenant", "acme"), true},
		{Label(""), false},
		{Keyed("k", ""), false},
		{Label("line\nbreak"), false},
		{Label("bad\xffutf8"), false},
		{Label(strings.Repeat("x", MaxTagLen+1)), false},
		{Keyed(strings.Repeat("k", MaxTagLen+1), "v"), false},
	} {
		err := tc.tag.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidTag)) {
			t.Errorf("Validate(%q) = %v, want ok=%t", tc.tag, err, tc.ok)
		}
	}
}
