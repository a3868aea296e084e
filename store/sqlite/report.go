package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// OutcomeReport applies the batch of outcomes in one write transaction, each
// fenced by (p.Worker, Attempt), and answers every outcome in input order.
// An applied outcome moves the job to the outcome's state (a retry is due
// at the store's now plus RetryDelay), applies the Retry Cause rule
// (core.RetryCauseAfter), records the Transition Log entry with the Failure
// Detail, stores the Job Output, merges the Tag delta and frees the Queue's
// slot (the Running count is derived from the rows). A stale outcome mutates
// nothing and is answered Applied=false; so is a second outcome for a Lease
// the batch already names, which the first one made stale. An outcome that
// is not a legal outcome edge out of Running fails the whole call with
// store.ErrInvalidParams before anything is written.
//
// The writes are set-based, a few statements whatever the size of the
// batch: one UPDATE per kind of outcome (the edge it takes), then one
// INSERT per kind of Transition Log entry, and one each for the Job
// Outputs, the Tags and Tag Suggest's dictionary when some applied outcome
// carries them. Each statement reads the batch as one JSON argument keyed
// by job id (see jsonObject), so SQLite walks it once instead of pulling
// fields out of every row.
func (s *Store) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := make([]store.ReportResult, len(p.Outcomes))
	for i, o := range p.Outcomes {
		out[i] = store.ReportResult{Lease: o.Lease}
	}
	if len(p.Outcomes) == 0 {
		return out, s.ready(ctx)
	}
	var freed []string
	err := s.write(ctx, "report outcomes", func(tx *sql.Tx) error {
		var err error
		freed, err = s.report(ctx, tx, p, out)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(freed)
	s.hints.Announce(freed)
	return out, nil
}

// outcomeKind is the edge an outcome takes out of Running: the outcomes of
// one kind share every column they write but the due time of a retry.
type outcomeKind struct {
	state job.State
	via   core.Via
	cause job.TerminalCause
}

// report is OutcomeReport's transaction. It sets out[i].Applied for every
// outcome it applies and returns the Queues whose slots it freed or whose
// dependents it released due now.
func (s *Store) report(ctx context.Context, tx *sql.Tx, p store.ReportParams, out []store.ReportResult) ([]string, error) {
	for i := range out {
		out[i].Applied = false
	}
	now := s.clock.Now()
	at := micros(now)

	// Each Lease's first outcome; a later one for the same Lease is stale
	// once the first applies, and stays out of the batch.
	first := make(map[job.Lease]int, len(p.Outcomes))
	pending := make([]int, 0, len(p.Outcomes))
	for i, o := range p.Outcomes {
		if _, dup := first[o.Lease]; !dup {
			first[o.Lease] = i
			pending = append(pending, i)
		}
	}
	cancelled := make([]bool, len(p.Outcomes)) // a recorded cancel request won
	var freed []string
	var counts countDeltas
	// A round names each job once, so every statement's argument has unique
	// keys; outcomes for other Attempts of a job already named wait for the
	// next round (at most one of them can hold the job's Lease).
	for len(pending) > 0 {
		var later []int
		named := make(map[job.ID]bool, len(pending))
		var kinds []outcomeKind
		groups := make(map[outcomeKind]*jsonObject)
		for _, i := range pending {
			o := p.Outcomes[i]
			if named[o.Lease.ID] {
				later = append(later, i)
				continue
			}
			named[o.Lease.ID] = true
			k := outcomeKind{o.State, o.Via, o.TerminalCause}
			g := groups[k]
			if g == nil {
				g = &jsonObject{}
				groups[k] = g
				kinds = append(kinds, k)
			}
			if o.State == job.StateScheduled {
				g.pair(int64(o.Lease.ID), int64(o.Lease.Attempt), micros(now.Add(o.RetryDelay)))
			} else {
				g.int(int64(o.Lease.ID), int64(o.Lease.Attempt))
			}
		}
		for _, k := range kinds {
			var err error
			freed, err = s.applyKind(ctx, tx, p.Worker, k, groups[k], now, first, out, cancelled, freed, &counts)
			if err != nil {
				return nil, err
			}
		}
		pending = later
	}
	if err := s.addCounts(ctx, tx, counts); err != nil {
		return nil, err
	}

	// What follows the state changes, for the applied outcomes in input
	// order: the Transition Log entries (grouped by the edge applied, those
	// with a Failure Detail apart), outputs, Tags, and the terminal jobs
	// whose dependents may be released.
	record := s.opts.History.Records()
	var entryKinds []outcomeKind
	entries := make(map[outcomeKind]*jsonObject)
	var detailed, tags, known jsonRows
	var outputs jsonObject
	var terminal, trim []int64
	var seen map[job.Tag]bool
	for i, o := range p.Outcomes {
		if !out[i].Applied {
			continue
		}
		id := int64(o.Lease.ID)
		applied := core.UnderCancel(o.Outcome, cancelled[i]) // as the statement applied it
		if record {
			if d := s.opts.History.Detail(o.FailureDetail); d != "" {
				detailed.row()
				detailed.int(id)
				detailed.int(codeRunning)
				detailed.int(stateCode(applied.State))
				detailed.int(viaCode(applied.Via))
				detailed.int(int64(o.Lease.Attempt))
				detailed.hex([]byte(d))
			} else {
				k := outcomeKind{state: applied.State, via: applied.Via}
				e := entries[k]
				if e == nil {
					e = &jsonObject{}
					entries[k] = e
					entryKinds = append(entryKinds, k)
				}
				e.int(id, int64(o.Lease.Attempt))
			}
			if o.Lease.Attempt > store.TransitionTrimAttempt {
				trim = append(trim, id)
			}
		}
		if o.Output != nil && applied.State == job.StateSucceeded {
			outputs.hex(id, o.Output)
			if outputs.full() {
				if _, err := s.exec(ctx, tx, s.q.outputsOf, outputs.String()); err != nil {
					return nil, fmt.Errorf("store outputs: %w", err)
				}
				outputs.reset()
			}
		}
		if o.Cursor != nil {
			if err := s.setCursor(ctx, tx, o.Lease, o.Cursor, at); err != nil {
				return nil, err
			}
		}
		if len(o.TagDelta) > 0 && seen == nil {
			seen = make(map[job.Tag]bool)
		}
		appendTags(&tags, &known, seen, id, o.TagDelta)
		if applied.State.Terminal() {
			terminal = append(terminal, id)
		}
	}
	for _, k := range entryKinds {
		if _, err := s.exec(ctx, tx, s.q.transitionsOf, entries[k].String(), at, codeRunning, stateCode(k.state), viaCode(k.via)); err != nil {
			return nil, fmt.Errorf("record transitions: %w", err)
		}
	}
	for _, w := range []struct {
		what  string
		query string
		arg   interface {
			len() int
			String() string
		}
		more []any
	}{
		{"record transitions", s.q.transitionRows, &detailed, []any{at}},
		{"store outputs", s.q.outputsOf, &outputs, nil},
		{"merge tags", s.q.tagRows, &tags, nil},
		{"know tags", s.q.knowTagRows, &known, nil},
	} {
		if w.arg.len() == 0 {
			continue
		}
		if _, err := s.exec(ctx, tx, w.query, append([]any{w.arg.String()}, w.more...)...); err != nil {
			return nil, fmt.Errorf("%s: %w", w.what, err)
		}
	}
	for _, id := range trim {
		if err := s.trimLog(ctx, tx, id); err != nil {
			return nil, err
		}
	}
	released, err := s.settle(ctx, tx, terminal, now)
	return mergeQueues(freed, released), err
}

// applyKind applies the outcomes of kind k in batch (job id → Attempt, or
// [Attempt, due time] for a retry), fenced by worker and Attempt, with the
// cancel-wins rule; it marks each applied outcome in out (and in cancelled
// when a recorded cancel request won), finding it by its Lease in first,
// and returns freed with the Queues of the applied jobs added. The
// statement flips count_flip; counts gets the state changes it made.
func (s *Store) applyKind(ctx context.Context, tx *sql.Tx, worker job.WorkerID, k outcomeKind, batch *jsonObject, now time.Time,
	first map[job.Lease]int, out []store.ReportResult, cancelled []bool, freed []string, counts *countDeltas) ([]string, error) {
	query := s.q.applyOutcomes
	if k.state == job.StateScheduled {
		query = s.q.applyRetries
	}
	var cancelCause, finalizedAt any
	if k.state == job.StateCancelled {
		cancelCause = encode(cancelCauseCodes, job.CancelCauseOperator)
	}
	if k.state.Terminal() {
		finalizedAt = micros(now)
	}
	args := []any{batch.String(), string(worker),
		stateCode(job.StateCancelled), encode(cancelCauseCodes, job.CancelCauseOperator), micros(now),
		stateCode(k.state), retryCauseArg(k.state, k.via), cancelCause, finalizedAt}
	if k.state == job.StateScheduled {
		snooze := 0 // a retry charges its Attempt; a snooze does not
		if k.via == core.ViaSnooze {
			snooze = 1
		}
		args = append(args, snooze)
	} else {
		args = append(args, nullString(k.cause.String()))
	}
	rows, err := s.query(ctx, tx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("apply outcomes: %w", err)
	}
	var queue sql.RawBytes
	for rows.Next() {
		var id, attempt, state int64
		var cancelRequested bool
		if err := rows.Scan(&id, &attempt, &queue, &cancelRequested, &state); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("apply outcomes: %w", err)
		}
		i, ok := first[job.Lease{ID: job.ID(id), Attempt: job.Attempt(attempt)}]
		if !ok {
			_ = rows.Close()
			return nil, fmt.Errorf("apply outcomes: job %d at attempt %d changed but is not in the batch", id, attempt)
		}
		out[i].Applied, cancelled[i] = true, cancelRequested
		if !containsBytes(freed, queue) {
			freed = append(freed, string(queue))
		}
		counts.move(queue, codeRunning, state, 1)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("apply outcomes: %w", err)
	}
	return freed, nil
}

// containsBytes reports whether b is among ss, without a copy of b.
func containsBytes(ss []string, b []byte) bool {
	for _, s := range ss {
		if s == string(b) {
			return true
		}
	}
	return false
}
