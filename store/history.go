package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// HistoryPolicy is the global Job History Policy: how much of each job's
// Transition Log a store records. It is a store option, an input to a run
// fixed when the store is opened, so it never changes a decision.
type HistoryPolicy uint8

const (
	// HistoryTransitionsWithDetail (the default, the zero value) records
	// every Transition Log entry with the Failure Detail of a failed Attempt.
	HistoryTransitionsWithDetail HistoryPolicy = iota
	// HistoryTransitions records every entry but drops Failure Detail.
	HistoryTransitions
	// HistoryOff records no Transition Log at all: the store skips the
	// writes. Job Output is unaffected (glossary, Job Output).
	HistoryOff
)

var historyNames = [...]string{
	HistoryTransitionsWithDetail: "transitions+detail",
	HistoryTransitions:           "transitions",
	HistoryOff:                   "off",
}

// String names the policy as ParseHistoryPolicy reads it.
func (p HistoryPolicy) String() string {
	if int(p) < len(historyNames) {
		return historyNames[p]
	}
	return fmt.Sprintf("history_policy(%d)", uint8(p))
}

// ParseHistoryPolicy reads "off", "transitions" or "transitions+detail" (the
// empty string is the default, transitions+detail).
func ParseHistoryPolicy(s string) (HistoryPolicy, error) {
	if s == "" {
		return HistoryTransitionsWithDetail, nil
	}
	for p, name := range historyNames {
		if name == s {
			return HistoryPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("%w: job history policy %q (want off, transitions or transitions+detail)", ErrInvalidParams, s)
}

// HistoryFromQuery reads the Job History Policy a store URI's query names
// in its "history" parameter: off, transitions or transitions+detail. The
// "+" may arrive decoded as a space, as url.Values decodes it, and is read
// back as "+". ok is false when the query names none.
func HistoryFromQuery(q url.Values) (p HistoryPolicy, ok bool, err error) {
	vals, ok := q["history"]
	if !ok {
		return HistoryTransitionsWithDetail, false, nil
	}
	if len(vals) != 1 || vals[0] == "" {
		return 0, true, fmt.Errorf("%w: URI parameter history: want exactly one of off, transitions, transitions+detail", ErrInvalidParams)
	}
	p, err = ParseHistoryPolicy(strings.ReplaceAll(vals[0], " ", "+"))
	return p, true, err
}

// Validate rejects a policy that is none of the three.
func (p HistoryPolicy) Validate() error {
	if int(p) >= len(historyNames) {
		return fmt.Errorf("%w: job history policy %d", ErrInvalidParams, uint8(p))
	}
	return nil
}

// Records reports whether the policy writes Transition Log entries.
func (p HistoryPolicy) Records() bool { return p != HistoryOff }

// Detail returns the Failure Detail an entry keeps under the policy: detail
// itself under HistoryTransitionsWithDetail, "" otherwise.
func (p HistoryPolicy) Detail(detail string) string {
	if p == HistoryTransitionsWithDetail {
		return detail
	}
	return ""
}

// TransitionLogCap bounds one job's Transition Log over the job's whole
// life: when an entry would make it longer, the oldest entries are dropped,
// so the log keeps the newest TransitionLogCap. With the default attempt
// ceiling (25) a job's first life takes at most 2 entries per Attempt plus
// its insert and a final cancel: 52, well inside the cap; the cap bounds a
// job that operators requeue again and again. The cap never drops an entry
// a live Transition Observer registration has not been walked past: such a
// log outgrows the cap until the walk passes, then shrinks back at the
// job's next entry (see Observers).
const TransitionLogCap = 100

// TransitionTrimAttempt is the highest Attempt at which a job's log cannot
// exceed TransitionLogCap: every entry but the insert and one cancel follows
// a claim (the claim itself, the end of its Attempt, and at most one
// requeue), so a job at Attempt a holds at most 3a+2 entries. Adapters trim
// only the logs of jobs past it, which keeps the trim off the common path.
const TransitionTrimAttempt = (TransitionLogCap - 2) / 3

// Transition is one entry of a job's Transition Log: at At, by Via, the job
// moved from From to State, its Attempt then being Attempt. The Transition
// Log is append-only, written by the store atomically with the state change
// it records, capped at TransitionLogCap entries per job and deleted with
// the job.
type Transition struct {
	At time.Time
	// From is job.StateUnknown for the insert entry.
	From    job.State
	State   job.State
	Via     core.Via
	Attempt job.Attempt
	// FailureDetail is the bounded diagnostic text a failed Attempt's
	// outcome (or an unroutable job's quarantine) carried; empty otherwise
	// and under a Job History Policy without detail.
	FailureDetail string
	// Seq is the entry's Transition Log sequence number, the one a
	// Transition Observer sees as ObserverPosition.Seq and dedupes on: it
	// increases along one job's log, and no two entries share it.
	Seq int64
}

// Edge returns the state edge the entry records.
func (t Transition) Edge() core.Edge { return core.Edge{From: t.From, To: t.State, Via: t.Via} }

// History is the per-job read side of the Transition Log and Job Output.
type History interface {
	// JobTransitions returns the job's Transition Log, oldest entry first:
	// one entry per state change the store recorded under its Job History
	// Policy, at most TransitionLogCap. An unknown job is ErrNotFound.
	JobTransitions(ctx context.Context, id job.ID) ([]Transition, error)
	// JobOutput returns the Job Output the job's Succeeded outcome stored,
	// or nil if none was. A plain by-id read: it never checks who asks. An
	// unknown job is ErrNotFound.
	JobOutput(ctx context.Context, id job.ID) ([]byte, error)
	// History returns the Job History Policy the store records under, as
	// it was opened with. A Client refuses to start a Transition Observer
	// over a store recording no Transition Log (HistoryOff).
	History() HistoryPolicy
}
