package core

import "time"

// ReplaceDue returns the due time a Replace gives the pending holder of a
// unique key: the replacing job's own requested run-at time, or now if it
// requested none (DueAt). The holder's old due time is forgotten.
func ReplaceDue(now, requested time.Time) time.Time { return DueAt(now, requested) }

// DebounceDue returns the due time a Debounce gives the pending holder of a
// unique key, enqueued first at created: now + wait, but never later than
// created + maxWait. The bound is what makes a burst that never pauses run
// at all: every enqueue of the burst pushes the due time out, and the
// first enqueue's max wait caps the push, so the job runs at most maxWait
// after the burst began. The result is never before now: a holder whose
// max wait has passed is due at once.
//
// SQL adapters restate it as least(now + wait, greatest(created +
// max_wait, now)); the Conformance Suite holds them to this function.
func DebounceDue(now, created time.Time, wait, maxWait time.Duration) time.Time {
	due := now.Add(wait)
	if bound := created.Add(maxWait); bound.Before(due) {
		due = bound
	}
	if due.Before(now) {
		return now
	}
	return due
}
