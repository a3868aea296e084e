package core

import (
	"fmt"
	"strconv"
	"time"
)

// CatchUpPolicy is what a Recurring Schedule does about occurrences missed
// while no node minted them (the system was down, or every node was busy
// past the MissedAfter window). Replaying every missed occurrence is
// deliberately not offered.
type CatchUpPolicy uint8

const (
	// CatchUpSkip (the default): missed means missed. The missed span is
	// recorded as one skipped occurrence, and the schedule carries on with
	// its next occurrence.
	CatchUpSkip CatchUpPolicy = iota
	// CatchUpCoalesce mints exactly one make-up job for the whole missed
	// span, never one per missed occurrence.
	CatchUpCoalesce
)

var catchUpNames = [...]string{CatchUpSkip: "skip", CatchUpCoalesce: "coalesce"}

// String returns the stored name of the policy.
func (p CatchUpPolicy) String() string {
	if int(p) < len(catchUpNames) {
		return catchUpNames[p]
	}
	return "catch_up(" + strconv.Itoa(int(p)) + ")"
}

// ParseCatchUpPolicy is the inverse of CatchUpPolicy.String.
func ParseCatchUpPolicy(s string) (CatchUpPolicy, error) {
	for p, name := range catchUpNames {
		if name == s {
			return CatchUpPolicy(p), nil
		}
	}
	return CatchUpSkip, fmt.Errorf("core: unknown catch-up policy %q (want skip or coalesce)", s)
}

// SkipReason says why an occurrence of a Recurring Schedule minted no job.
type SkipReason uint8

const (
	// SkipOverlap: the schedule has No-Overlap and an instance it minted
	// earlier was still non-terminal at mint time.
	SkipOverlap SkipReason = iota + 1
	// SkipMissed: the occurrences from Skip.First to Skip.At were missed
	// and the Catch-Up Policy is Skip.
	SkipMissed
)

var skipReasonNames = [...]string{SkipOverlap: "overlap", SkipMissed: "missed"}

// String returns the stored name of the reason.
func (r SkipReason) String() string {
	if int(r) < len(skipReasonNames) && skipReasonNames[r] != "" {
		return skipReasonNames[r]
	}
	return "skip_reason(" + strconv.Itoa(int(r)) + ")"
}

// ParseSkipReason is the inverse of SkipReason.String.
func ParseSkipReason(s string) (SkipReason, error) {
	for r, name := range skipReasonNames {
		if name != "" && name == s {
			return SkipReason(r), nil
		}
	}
	return 0, fmt.Errorf("core: unknown skip reason %q", s)
}

// Occurrences yields the occurrence instants of a Recurring Schedule: Next
// returns the first one strictly after after, or the zero Time if there is
// none. (A cron expression in its zone; see package core/cron.)
type Occurrences interface {
	Next(after time.Time) time.Time
}

// ScheduleState is what the mint planner knows of one Recurring Schedule
// when it plans: the stored schedule as a store loaded it.
type ScheduleState struct {
	Name string
	// Revision is the schedule's stored revision; a store applies a plan
	// only to the revision it was made from.
	Revision int64
	// Cursor is the last occurrence instant the schedule has dealt with
	// (minted, made up or recorded as skipped); later ones are pending. A
	// new schedule's cursor is the instant it was registered.
	Cursor    time.Time
	CatchUp   CatchUpPolicy
	NoOverlap bool
	Paused    bool
	// InstanceLive is true while the last job the schedule minted (or an
	// operator triggered) is non-terminal.
	InstanceLive bool
}

// MintSettings tune the mint planner.
type MintSettings struct {
	// Lookahead lets the planner mint occurrences up to now+Lookahead
	// ahead of time, as jobs due at their instant, so they start on time
	// rather than at the next maintenance beat. Not used for No-Overlap
	// schedules, whose overlap check must see the state at the occurrence.
	Lookahead time.Duration
	// MissedAfter is how late an occurrence may be minted and still count
	// as on time; an older pending occurrence is missed (Catch-Up Policy).
	MissedAfter time.Duration
	// MaxOccurrences bounds the on-time occurrences one plan handles
	// (at least 1); the rest wait for the next plan.
	MaxOccurrences int
}

// Mint is one job a plan mints: for the occurrence at At, or, if MakeUp,
// the one make-up job of a missed span that ends at At.
type Mint struct {
	At     time.Time
	MakeUp bool
}

// Skip is one occurrence a plan records as skipped, visibly: At is the
// occurrence, or the last of a missed span that starts at First (First
// equals At for a single occurrence). A missed span is skipped for
// SkipMissed under CatchUpSkip, or for SkipOverlap when its make-up job
// would overlap a live instance.
type Skip struct {
	At     time.Time
	First  time.Time
	Reason SkipReason
}

// MintPlan is the Core's decision for one Recurring Schedule at one
// maintenance beat. A store applies it atomically and only if the
// schedule's revision is still Revision: it mints a job from the
// schedule's template per Mint (due at Mint.At, idempotently per
// (schedule, occurrence instant)), records each Skip and moves the cursor
// to Cursor.
type MintPlan struct {
	Schedule string
	Revision int64
	// Cursor is the last occurrence the plan deals with.
	Cursor time.Time
	Mints  []Mint
	Skips  []Skip
}

// PlanMint decides what a Recurring Schedule mints at now (the store's
// clock): every occurrence after the cursor up to now (or now+Lookahead)
// becomes a job, except that
//   - a paused schedule mints nothing;
//   - occurrences older than now-MissedAfter are missed: under CatchUpSkip
//     the span is recorded as one SkipMissed; under CatchUpCoalesce it
//     becomes exactly one make-up job, for the last missed occurrence;
//   - under No-Overlap, an occurrence (make-up included) while an instance
//     is live is recorded as SkipOverlap instead, and a job the plan itself
//     mints counts as live for the occurrences after it.
//
// It returns false when there is nothing to do. A zero cursor is taken as
// now: a schedule never makes up for the time before it existed.
func PlanMint(s ScheduleState, occ Occurrences, now time.Time, set MintSettings) (MintPlan, bool) {
	if s.Paused {
		return MintPlan{}, false
	}
	cursor := s.Cursor
	if cursor.IsZero() {
		cursor = now
	}
	horizon := now
	if !s.NoOverlap && set.Lookahead > 0 {
		horizon = now.Add(set.Lookahead)
	}
	first := occ.Next(cursor)
	if first.IsZero() || first.After(horizon) {
		return MintPlan{}, false
	}
	plan := MintPlan{Schedule: s.Name, Revision: s.Revision, Cursor: cursor}
	live := s.InstanceLive
	missedBefore := now.Add(-set.MissedAfter)
	next := first
	if first.Before(missedBefore) {
		last := lastBefore(occ, first, missedBefore, set.MissedAfter)
		plan.Cursor = last
		switch {
		case s.CatchUp == CatchUpSkip:
			plan.Skips = append(plan.Skips, Skip{At: last, First: first, Reason: SkipMissed})
		case s.NoOverlap && live:
			// The span's make-up job would overlap a live instance.
			plan.Skips = append(plan.Skips, Skip{At: last, First: first, Reason: SkipOverlap})
		default:
			plan.Mints = append(plan.Mints, Mint{At: last, MakeUp: true})
			live = true
		}
		next = occ.Next(last)
	}
	for n := 0; !next.IsZero() && !next.After(horizon) && n < max(set.MaxOccurrences, 1); n++ {
		if s.NoOverlap && live {
			plan.Skips = append(plan.Skips, Skip{At: next, First: next, Reason: SkipOverlap})
		} else {
			plan.Mints = append(plan.Mints, Mint{At: next})
			live = true
		}
		plan.Cursor = next
		next = occ.Next(next)
	}
	return plan, true
}

// lastBefore returns the last occurrence before end, given that first
// (≥ the cursor) is one. It searches windows growing back from end, so it
// costs about as much as the occurrences near end, however long the span.
func lastBefore(occ Occurrences, first, end time.Time, window time.Duration) time.Time {
	window = max(window, time.Minute)
	for {
		from := end.Add(-window)
		if !from.After(first) {
			from = first.Add(-time.Nanosecond)
		}
		var last time.Time
		for o := occ.Next(from); !o.IsZero() && o.Before(end); o = occ.Next(o) {
			last = o
		}
		if !last.IsZero() {
			return last
		}
		window *= 2
	}
}
