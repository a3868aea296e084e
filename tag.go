package backwave

import "github.com/backwave/backwave/job"

// Tag is an observational annotation on a job, for search, filtering and
// grouping; scheduling never reads one. A Tag is a Label (Key empty: a bare
// string such as "urgent") or a Keyed Tag (a key with a value such as
// tenant→acme). The two kinds are told apart structurally: a colon inside a
// Label is ordinary data, never a separator. A job's Tags are a set.
type Tag struct {
	// Key is empty for a Label.
	Key string
	// Value is the Label, or the Keyed Tag's value; never empty.
	Value string
}

// Label returns the Label tag s.
func Label(s string) Tag { return Tag{Value: s} }

// Keyed returns the Keyed Tag key→value.
func Keyed(key, value string) Tag { return Tag{Key: key, Value: value} }

// IsLabel reports whether the tag is a Label rather than a Keyed Tag.
func (t Tag) IsLabel() bool { return t.Key == "" }

// String renders a Label as its value and a Keyed Tag as "key=value", the
// form Tag Suggest matches a prefix against. It is for display: stores keep
// the two parts apart.
func (t Tag) String() string { return job.Tag(t).String() }

// Validate reports whether the tag can be stored: a non-empty value, both
// parts valid UTF-8 of at most 255 bytes, and no control characters. The
// error wraps ErrInvalidTag.
func (t Tag) Validate() error { return job.Tag(t).Validate() }

// tagsOf converts stored Tags to the root type.
func tagsOf(tags []job.Tag) []Tag {
	if tags == nil {
		return nil
	}
	out := make([]Tag, len(tags))
	for i, t := range tags {
		out[i] = Tag(t)
	}
	return out
}

// jobTags converts Tags to the stored type.
func jobTags(tags []Tag) []job.Tag {
	if tags == nil {
		return nil
	}
	out := make([]job.Tag, len(tags))
	for i, t := range tags {
		out[i] = job.Tag(t)
	}
	return out
}
