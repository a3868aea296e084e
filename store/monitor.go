package store

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/backwave/backwave/job"
)

// MaxPayloadBytes bounds a job's encoded payload. The payload is written
// once and read at every claim; a larger one belongs in the application's
// own storage, referenced from the job.
const MaxPayloadBytes = 1 << 20

// JobFilter selects jobs for Monitor.JobList and Monitor.TagFacet. Every
// set field must match.
type JobFilter struct {
	// States, if non-empty, keeps jobs in any of them.
	States []job.State
	// Queue, if set, keeps jobs of that Queue.
	Queue string
	// WireName, if set, keeps jobs of that Wire Name.
	WireName string
	// Tags, if non-empty, keeps jobs carrying every one of them, matched
	// exactly (key, value and casing; glossary, Tag Suggest: "job filtering
	// stays exact-match").
	Tags []job.Tag
	// Retrying keeps only the Retrying view: Scheduled jobs carrying a Retry
	// Cause (glossary, Retrying).
	Retrying bool
	// CreatedFrom, if non-zero, keeps jobs created at or after it.
	CreatedFrom time.Time
	// CreatedTo, if non-zero, keeps jobs created before it.
	CreatedTo time.Time
}

// Validate checks the filter's Tags and time range.
func (f JobFilter) Validate() error {
	for _, t := range f.Tags {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("%w: filter: %w", ErrInvalidParams, err)
		}
	}
	for _, b := range [...]struct {
		what string
		t    time.Time
	}{{"created-from", f.CreatedFrom}, {"created-to", f.CreatedTo}} {
		if err := ValidateTime("filter: "+b.what, b.t); err != nil {
			return err
		}
	}
	if !f.CreatedFrom.IsZero() && !f.CreatedTo.IsZero() && f.CreatedTo.Before(f.CreatedFrom) {
		return fmt.Errorf("%w: filter: created-to %v is before created-from %v", ErrInvalidParams, f.CreatedTo, f.CreatedFrom)
	}
	return nil
}

// Match reports whether j passes the filter: the In-Memory Store's
// definition, which the SQL adapters restate.
func (f JobFilter) Match(j *job.Job) bool {
	if len(f.States) > 0 {
		found := false
		for _, s := range f.States {
			found = found || s == j.State
		}
		if !found {
			return false
		}
	}
	switch {
	case f.Queue != "" && j.Queue != f.Queue,
		f.WireName != "" && j.WireName != f.WireName,
		f.Retrying && !j.Retrying(),
		!f.CreatedFrom.IsZero() && j.CreatedAt.Before(f.CreatedFrom),
		!f.CreatedTo.IsZero() && !j.CreatedAt.Before(f.CreatedTo):
		return false
	}
	for _, want := range f.Tags {
		found := false
		for _, t := range j.Tags {
			found = found || t == want
		}
		if !found {
			return false
		}
	}
	return true
}

// TagFacetParams are the params of Monitor.TagFacet.
type TagFacetParams struct {
	JobFilter
	// Limit is how many buckets to return; 0 means 10.
	Limit int
}

// BucketLimit returns the effective bucket count of a TagFacet call.
func (p TagFacetParams) BucketLimit() int {
	if p.Limit <= 0 {
		return 10
	}
	return min(p.Limit, 1000)
}

// TagCount is one Tag Facet bucket: a Tag and how many jobs of the filtered
// slice carry it.
type TagCount struct {
	Tag   job.Tag
	Count int
}

// CompareTagCounts orders Tag Facet buckets: higher count first, ties by Tag
// (job.CompareTags).
func CompareTagCounts(a, b TagCount) int {
	if a.Count != b.Count {
		if a.Count > b.Count {
			return -1
		}
		return 1
	}
	return job.CompareTags(a.Tag, b.Tag)
}

// TagSuggestParams are the params of Monitor.TagSuggest.
type TagSuggestParams struct {
	// Prefix is matched, case-insensitively, against the start of each
	// Tag's display form (job.Tag.String: a Label's value, a Keyed Tag's
	// "key=value"). The empty prefix matches every Tag.
	Prefix string
	// Limit is how many Tags to return; 0 means 20.
	Limit int
}

// SuggestLimit returns the effective size of a TagSuggest answer.
func (p TagSuggestParams) SuggestLimit() int {
	if p.Limit <= 0 {
		return 20
	}
	return min(p.Limit, 1000)
}

// Validate checks the prefix: valid UTF-8 within job.MaxTagLen*2+1 bytes.
func (p TagSuggestParams) Validate() error {
	if len(p.Prefix) > 2*job.MaxTagLen+1 || !utf8.ValidString(p.Prefix) {
		return fmt.Errorf("%w: tag suggest prefix %s is not valid UTF-8 within %d bytes", ErrInvalidParams, Echo(p.Prefix), 2*job.MaxTagLen+1)
	}
	return nil
}

// FoldTag is the case-insensitive key Tag Suggest matches and orders by: the
// lower-cased display form. Stores keep it beside every distinct Tag.
func FoldTag(t job.Tag) string { return strings.ToLower(t.String()) }

// FoldPrefix folds a Tag Suggest prefix the way FoldTag folds a Tag.
func FoldPrefix(prefix string) string { return strings.ToLower(prefix) }

// CompareSuggestions orders Tag Suggest answers lexicographically: by the
// folded display form, ties (Tags differing only in case, or a Label that
// reads like a Keyed Tag) by Tag.
func CompareSuggestions(a, b job.Tag) int {
	if c := strings.Compare(FoldTag(a), FoldTag(b)); c != 0 {
		return c
	}
	if c := strings.Compare(a.String(), b.String()); c != 0 {
		return c
	}
	return job.CompareTags(a, b)
}

// QueueStateCount is the number of jobs of one Queue in one state.
type QueueStateCount struct {
	Queue string
	State job.State
	Count int
}
