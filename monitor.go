package backwave

import (
	"fmt"

	"github.com/backwave/backwave/store"
)

// Retrying reports whether the job is in the Retrying view: Scheduled and
// carrying a Retry Cause.
func (j JobInfo) Retrying() bool { return j.State == StateScheduled && j.RetryCause != RetryCauseNone }

// transitionsOf converts a Transition Log; never nil.
func transitionsOf(trs []store.Transition) []Transition {
	out := make([]Transition, len(trs))
	for i, t := range trs {
		out[i] = transitionOf(t)
	}
	return out
}

// JobDetail is one job as the Monitor's job page shows it: the row, its
// Transition Log and its Job Output.
type JobDetail struct {
	Job JobInfo
	// Transitions is the Transition Log, oldest entry first.
	Transitions []Transition
	// Output is the Job Output, nil if none.
	Output []byte
	// Rewrites are the job's rewrites by enqueues in Replace or Debounce
	// mode (UniqueScope.Replace, UniqueScope.Debounce), oldest first: the
	// audit trail's AuditUniqueReplace and AuditUniqueDebounce entries for
	// the job, at most MaxPageLimit of the newest. A rewrite changes no
	// state, so the Transition Log does not show it.
	Rewrites []AuditEntry
}

// JobListParams filter and page Admin.Jobs.
type JobListParams struct {
	JobFilter
	PageParams
}

// Paging of Monitor lists.
const (
	// DefaultPageLimit is the page size when PageParams.Limit is 0.
	DefaultPageLimit = 100
	// MaxPageLimit bounds a page; a larger Limit is cut to it.
	MaxPageLimit = 10_000
)

// Cursor is a keyset position in a Monitor list. Every list runs newest
// first, and a Cursor is the key of the last entry a page holds: a JobID
// for jobs, an AuditEntry.ID for the audit trail, an Occurrence.Seq for a
// schedule's occurrence records. Paging by key, not by offset, never skips
// or repeats an entry while new ones arrive. The zero Cursor is the newest
// end of the list.
type Cursor int64

// PageParams ask for one page of a Monitor list.
type PageParams struct {
	// Before, if non-zero, keeps the entries older than it: pass the
	// previous page's Next.
	Before Cursor
	// Limit is the page size: DefaultPageLimit if 0, at most MaxPageLimit.
	Limit int
}

// limit returns the effective page size, or an error wrapping
// ErrInvalidParams for a negative Limit or Before.
func (p PageParams) limit() (int, error) {
	switch {
	case p.Limit < 0:
		return 0, fmt.Errorf("%w: page limit %d is negative", ErrInvalidParams, p.Limit)
	case p.Before < 0:
		return 0, fmt.Errorf("%w: cursor %d is negative", ErrInvalidParams, p.Before)
	case p.Limit == 0:
		return DefaultPageLimit, nil
	}
	return min(p.Limit, MaxPageLimit), nil
}

// Page is one page of a Monitor list, newest first.
type Page[T any] struct {
	Items []T
	// Next is the Before of the following page; zero when this page is the
	// last. A page shorter than its limit is the last; a full one may be
	// followed by an empty page.
	Next Cursor
}

// readPage reads the page p asks for of a Monitor list: fetch reads up to
// limit rows from the store, conv converts one, key is an entry's Cursor.
// Errors say what was read.
func readPage[S, T any](p PageParams, what string, fetch func(limit int) ([]S, error), conv func(S) T, key func(*T) Cursor) (Page[T], error) {
	limit, err := p.limit()
	var rows []S
	if err == nil {
		rows, err = fetch(limit)
	}
	if err != nil {
		return Page[T]{}, fmt.Errorf("backwave: %s: %w", what, err)
	}
	page := Page[T]{Items: make([]T, len(rows))}
	for i, r := range rows {
		page.Items[i] = conv(r)
	}
	if len(rows) > 0 && len(rows) >= limit {
		page.Next = key(&page.Items[len(rows)-1])
	}
	return page, nil
}
