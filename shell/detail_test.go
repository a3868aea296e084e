package shell_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/backwave/backwave/shell"
)

func TestTruncateDetail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"fits", "boom", 10, "boom"},
		{"exact", "boom", 4, "boom"},
		{"no limit", strings.Repeat("x", 10000), 0, strings.Repeat("x", 10000)},
		{"ascii cut", strings.Repeat("x", 30), 20, strings.Repeat("x", 20-len(shell.TruncatedMark)) + shell.TruncatedMark},
		// "é" is 2 bytes: 20-14=6 bytes of room hold exactly 3 runes.
		{"rune boundary even", strings.Repeat("é", 20), 20, "ééé" + shell.TruncatedMark},
		// 7 bytes of room: the 4th rune would be split, so 3 runes.
		{"rune boundary odd", strings.Repeat("é", 20), 21, "ééé" + shell.TruncatedMark},
		{"limit below mark", strings.Repeat("é", 20), 5, "éé"},
		{"invalid utf-8 replaced", "a\xffb", 100, "a\uFFFDb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shell.TruncateDetail(tc.in, tc.limit)
			if got != tc.want {
				t.Errorf("TruncateDetail(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
			}
			if tc.limit > 0 && len(got) > tc.limit {
				t.Errorf("result is %d bytes, over the limit %d", len(got), tc.limit)
			}
			if !utf8.ValidString(got) {
				t.Errorf("result is not valid UTF-8: %q", got)
			}
		})
	}
}

// Every cut of every limit stays within the limit and whole-rune.
func TestTruncateDetailProperty(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("a€😀é", 20)
	for limit := 1; limit <= len(in)+1; limit++ {
		got := shell.TruncateDetail(in, limit)
		if len(got) > limit || !utf8.ValidString(got) {
			t.Fatalf("limit %d: %q (%d bytes)", limit, got, len(got))
		}
		if len(in) > limit && limit >= len(shell.TruncatedMark) && !strings.HasSuffix(got, shell.TruncatedMark) {
			t.Fatalf("limit %d: cut text is not marked: %q", limit, got)
		}
		if !strings.HasPrefix(in, strings.TrimSuffix(got, shell.TruncatedMark)) {
			t.Fatalf("limit %d: %q is not a prefix of the input", limit, got)
		}
	}
}
