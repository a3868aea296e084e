package backwave

import (
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/store"
)

// OccurrenceKind says what became of one occurrence of a Recurring
// Schedule.
type OccurrenceKind uint8

// The kinds of occurrence record.
const (
	// OccurrenceMinted: a job was minted for the occurrence.
	OccurrenceMinted OccurrenceKind = OccurrenceKind(store.OccurrenceMinted)
	// OccurrenceMadeUp: the one make-up job of a missed span
	// (CatchUpCoalesce).
	OccurrenceMadeUp OccurrenceKind = OccurrenceKind(store.OccurrenceMadeUp)
	// OccurrenceSkipped: no job; the record's Reason says why.
	OccurrenceSkipped OccurrenceKind = OccurrenceKind(store.OccurrenceSkipped)
	// OccurrenceTriggered: an operator triggered the schedule now.
	OccurrenceTriggered OccurrenceKind = OccurrenceKind(store.OccurrenceTriggered)
)

// String returns the stored name of the kind, e.g. "made_up".
func (k OccurrenceKind) String() string { return store.OccurrenceKind(k).String() }

// SkipReason says why an occurrence of a Recurring Schedule minted no job.
type SkipReason uint8

// The reasons an occurrence is skipped.
const (
	// SkipOverlap: the schedule has No-Overlap and the job it made earlier
	// was still live.
	SkipOverlap SkipReason = SkipReason(core.SkipOverlap)
	// SkipMissed: the occurrences from the record's First to its At were
	// missed while no node minted them, and the Catch-Up Policy is
	// CatchUpSkip.
	SkipMissed SkipReason = SkipReason(core.SkipMissed)
)

// String returns the stored name of the reason: "overlap" or "missed".
func (r SkipReason) String() string { return core.SkipReason(r).String() }

// OccurrenceListParams filter and page Admin.ScheduleOccurrences.
type OccurrenceListParams struct {
	// Kinds, if non-empty, keeps the records of these kinds.
	Kinds []OccurrenceKind
	PageParams
}
