package store

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// MaxUniqueKeyLen bounds a unique key, in bytes.
const MaxUniqueKeyLen = 256

// UniqueScope says how long a unique key stays held by the job that took
// it.
type UniqueScope uint8

const (
	// UniqueWhileLive holds the key from its job's insert until the job
	// first ends terminal (Succeeded, Dead-Lettered, Cancelled or
	// Quarantined). Retries and Running keep it held.
	UniqueWhileLive UniqueScope = iota + 1
	// UniquePeriod holds the key for Unique.Period from its job's insert,
	// at the store's clock, whatever the job's state in the meantime.
	UniquePeriod
)

// String names the scope.
func (s UniqueScope) String() string {
	switch s {
	case UniqueWhileLive:
		return "while_live"
	case UniquePeriod:
		return "period"
	}
	return "unique_scope(?)"
}

// Unique makes an insert conditional on a unique key: the job is inserted
// only if no other job holds Key, and then holds it itself for its Scope.
// See Inserter.JobInsertManyResults. The zero value (no Key) is an
// ordinary insert.
type Unique struct {
	// Key names the work the job does, in the caller's terms
	// ("invoice:1042:send"): non-empty valid UTF-8 of at most
	// MaxUniqueKeyLen bytes, without control characters. Keys form one
	// namespace whatever their Scope.
	Key string
	// Scope is how long the key stays held; required with a Key.
	Scope UniqueScope
	// Period is how long a UniquePeriod key stays held: positive for that
	// scope, zero for UniqueWhileLive.
	Period time.Duration
	// Mode says what an insert does when Key is held (see UniqueMode); the
	// zero value, UniqueKeep, leaves the holder alone.
	Mode UniqueMode
	// Wait is the Debounce wait: positive for UniqueDebounce, zero
	// otherwise.
	Wait time.Duration
	// MaxWait bounds a Debounce: the holder is due no later than its own
	// insert + MaxWait, however long the burst. At least Wait for
	// UniqueDebounce, zero otherwise.
	MaxWait time.Duration
}

// UniqueMode says what an insert of a held unique key does to the holder.
type UniqueMode uint8

const (
	// UniqueKeep leaves the holder as it is: the insert answers the
	// holder's id and stores nothing.
	UniqueKeep UniqueMode = iota
	// UniqueReplace rewrites a Scheduled holder with the newcomer's
	// payload, due time (core.ReplaceDue) and Tags, in the insert's atomic
	// step. A holder in any other state refuses the insert with
	// ErrHolderNotPending.
	UniqueReplace
	// UniqueDebounce is UniqueReplace with the due time moved to now +
	// Wait, bounded by the holder's insert + MaxWait (core.DebounceDue).
	UniqueDebounce
)

// String names the mode.
func (m UniqueMode) String() string {
	switch m {
	case UniqueKeep:
		return "keep"
	case UniqueReplace:
		return "replace"
	case UniqueDebounce:
		return "debounce"
	}
	return "unique_mode(?)"
}

// ErrHolderNotPending is the answer to a Replace or Debounce insert whose
// unique key is held by a job that is not Scheduled: Running (its Attempt
// already read the payload), Awaiting Parent (its due time belongs to its
// latch) or ended (a UniquePeriod key outlives its job). Nothing of the
// insert is stored and the holder is untouched; the caller may enqueue
// again once the holder has ended, or enqueue without the mode.
var ErrHolderNotPending = errors.New("store: the unique key's holder is not pending")

// Rewrites reports whether the mode rewrites a held key's holder.
func (m UniqueMode) Rewrites() bool { return m == UniqueReplace || m == UniqueDebounce }

// InsertDue returns the due time of a job inserted at now with the key
// free: the requested time (now if none) as for any job, except in
// UniqueDebounce mode, where the first job of a burst waits too: now +
// Wait.
func (u Unique) InsertDue(now, requested time.Time) time.Time {
	if u.Mode == UniqueDebounce {
		return core.DebounceDue(now, now, u.Wait, u.MaxWait)
	}
	return core.DueAt(now, requested)
}

// RewriteDue returns the due time the mode gives a holder inserted at
// created when a newcomer asking for requested (zero: none) arrives at
// now. Only for a mode that Rewrites.
func (u Unique) RewriteDue(now, created, requested time.Time) time.Time {
	if u.Mode == UniqueDebounce {
		return core.DebounceDue(now, created, u.Wait, u.MaxWait)
	}
	return core.ReplaceDue(now, requested)
}

// Validate checks a job's unique key and scope. The zero Unique is valid.
func (u Unique) Validate() error {
	if u.Key == "" {
		if u.Scope != 0 || u.Period != 0 || u.Mode != 0 || u.Wait != 0 || u.MaxWait != 0 {
			return fmt.Errorf("%w: a unique scope without a unique key", ErrInvalidParams)
		}
		return nil
	}
	switch {
	case len(u.Key) > MaxUniqueKeyLen:
		return fmt.Errorf("%w: unique key %s is longer than %d bytes", ErrInvalidParams, Echo(u.Key), MaxUniqueKeyLen)
	case !utf8.ValidString(u.Key):
		return fmt.Errorf("%w: unique key %q is not valid UTF-8", ErrInvalidParams, u.Key)
	}
	for _, r := range u.Key {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: unique key %q contains a control character", ErrInvalidParams, u.Key)
		}
	}
	switch u.Scope {
	case UniqueWhileLive:
		if u.Period != 0 {
			return fmt.Errorf("%w: unique key %q is held while live but names a period of %v", ErrInvalidParams, u.Key, u.Period)
		}
	case UniquePeriod:
		if u.Period <= 0 {
			return fmt.Errorf("%w: unique key %q has period %v, want a positive one", ErrInvalidParams, u.Key, u.Period)
		}
	default:
		return fmt.Errorf("%w: unique key %q has no scope", ErrInvalidParams, u.Key)
	}
	return u.validateMode()
}

// validateMode checks the Mode, Wait and MaxWait of a key.
func (u Unique) validateMode() error {
	switch u.Mode {
	case UniqueKeep, UniqueReplace:
		if u.Wait != 0 || u.MaxWait != 0 {
			return fmt.Errorf("%w: unique key %q in mode %s names a debounce wait", ErrInvalidParams, u.Key, u.Mode)
		}
	case UniqueDebounce:
		switch {
		case u.Wait <= 0:
			return fmt.Errorf("%w: unique key %q debounces by %v, want a positive wait", ErrInvalidParams, u.Key, u.Wait)
		case u.MaxWait < u.Wait:
			return fmt.Errorf("%w: unique key %q debounces by %v with a max wait of %v, want a max wait of at least the wait",
				ErrInvalidParams, u.Key, u.Wait, u.MaxWait)
		}
	default:
		return fmt.Errorf("%w: unique key %q has unknown mode %d", ErrInvalidParams, u.Key, u.Mode)
	}
	return nil
}

// validateUnique checks every job's Unique, and that no job names a job of
// its own batch with a unique key as a parent: whether that parent is
// inserted is known only as the batch is, so the dependent names it by id
// in a later insert.
func validateUnique(jobs []NewJob) error {
	for i, nj := range jobs {
		if err := nj.Unique.Validate(); err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
	}
	for i, nj := range jobs {
		if nj.Unique.Mode == UniqueDebounce && !nj.ScheduledAt.IsZero() {
			return fmt.Errorf("job %d: %w: unique key %q debounces, which decides the due time, but the job names one too",
				i, ErrInvalidParams, nj.Unique.Key)
		}
		if nj.Unique.Mode.Rewrites() && len(nj.Dependency.Parents) > 0 {
			return fmt.Errorf("job %d: %w: unique key %q in mode %s names parents, which a rewrite of its holder could not keep",
				i, ErrInvalidParams, nj.Unique.Key, nj.Unique.Mode)
		}
		for _, r := range nj.Dependency.Parents {
			if r.ID == 0 && r.Index >= 0 && r.Index < len(jobs) && jobs[r.Index].Unique.Key != "" {
				return fmt.Errorf("job %d: %w: its parent, batch index %d, has a unique key; name it by id in a later insert",
					i, ErrInvalidParams, r.Index)
			}
		}
	}
	return nil
}

// InsertResult answers one job of an insert.
type InsertResult struct {
	// ID is the new job's id, or, when Inserted is false, the id of the job
	// that held the unique key (which a retention purge may since have
	// removed).
	ID job.ID
	// Inserted is false when the job's unique key was held and nothing was
	// inserted for it.
	Inserted bool
	// Replaced is true when the job's unique key was held and its mode
	// (UniqueReplace, UniqueDebounce) rewrote the holder, ID, with the
	// job's payload, Tags and a new due time.
	Replaced bool
}

// ResultIDs returns the ids of an insert's results, in order.
func ResultIDs(rs []InsertResult) []job.ID {
	if rs == nil {
		return nil
	}
	ids := make([]job.ID, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}
