package job

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Tag is an observational annotation on a job, for search, filtering and
// grouping. The Core never reads one. A Tag is a Label (Key empty: a bare
// string such as "urgent") or a Keyed Tag (a key with a string value such as
// tenant→acme). The kinds are told apart structurally: a colon inside a Label
// is ordinary data, never a separator.
type Tag struct {
	// Key is empty for a Label.
	Key   string
	Value string
}

// Label returns the Label tag s.
func Label(s string) Tag { return Tag{Value: s} }

// Keyed returns the Keyed Tag key→value.
func Keyed(key, value string) Tag { return Tag{Key: key, Value: value} }

// IsLabel reports whether the tag is a Label rather than a Keyed Tag.
func (t Tag) IsLabel() bool { return t.Key == "" }

// String renders a Label as its value and a Keyed Tag as "key=value". The
// rendering is for display only; stores keep the two parts apart.
func (t Tag) String() string {
	if t.IsLabel() {
		return t.Value
	}
	return t.Key + "=" + t.Value
}

// MaxTagLen bounds a tag key or value, in bytes.
const MaxTagLen = 255

// ErrInvalidTag is returned for a tag that cannot be stored.
var ErrInvalidTag = errors.New("job: invalid tag")

// Validate reports whether the tag can be stored: a non-empty value, both
// parts valid UTF-8 within MaxTagLen bytes, and no control characters.
func (t Tag) Validate() error {
	if t.Value == "" {
		return fmt.Errorf("%w: empty value (key %q)", ErrInvalidTag, t.Key)
	}
	for _, part := range []string{t.Key, t.Value} {
		if len(part) > MaxTagLen {
			return fmt.Errorf("%w: %q is longer than %d bytes", ErrInvalidTag, part[:32]+"…", MaxTagLen)
		}
		if !utf8.ValidString(part) {
			return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidTag, part)
		}
		if strings.ContainsFunc(part, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("%w: %q contains a control character", ErrInvalidTag, part)
		}
	}
	return nil
}

// CompareTags orders tags by key, then value; Labels (empty key) sort first.
func CompareTags(a, b Tag) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Value, b.Value)
}

// NormalizeTags returns the tags as a set: sorted by CompareTags with
// duplicates removed. Re-adding an identical tag is therefore a no-op. The
// input is not modified.
func NormalizeTags(tags []Tag) []Tag {
	if len(tags) == 0 {
		return nil
	}
	out := slices.Clone(tags)
	slices.SortFunc(out, CompareTags)
	return slices.Compact(out)
}

// MergeTags returns the set union of a and b, normalized.
func MergeTags(a, b []Tag) []Tag {
	return NormalizeTags(append(slices.Clone(a), b...))
}
