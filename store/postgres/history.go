package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobTransitions returns the job's Transition Log, oldest entry first: one
// entry per state change since insert. It fails with store.ErrNotFound for
// an unknown job.
func (s *Store) JobTransitions(ctx context.Context, id job.ID) ([]store.Transition, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if _, err := s.JobGet(ctx, id); err != nil {
		return nil, err
	}
	var out []store.Transition
	err := s.db.query(ctx, s.sql(`SELECT t.at, t.from_state, t.state, t.via, t.attempt, coalesce(t.failure_detail, ''), t.seq
FROM backwave.job_transition t WHERE t.job_id = $1 ORDER BY t.seq`), []any{int64(id)}, func(scan scanFunc) error {
		var tr store.Transition
		var from, to, via string
		if err := scan(&tr.At, &from, &to, &via, &tr.Attempt, &tr.FailureDetail, &tr.Seq); err != nil {
			return err
		}
		tr.At = tr.At.UTC()
		var err error
		if from != job.StateUnknown.String() {
			if tr.From, err = job.ParseState(from); err != nil {
				return err
			}
		}
		if tr.State, err = job.ParseState(to); err != nil {
			return err
		}
		if tr.Via, err = parseVia(via); err != nil {
			return err
		}
		out = append(out, tr)
		return nil
	})
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("read the transition log of job %d", id), err)
	}
	return out, nil
}

// parseVia is the inverse of core.Via.String.
func parseVia(name string) (core.Via, error) {
	for _, e := range core.Edges {
		if e.Via.String() == name {
			return e.Via, nil
		}
	}
	return 0, fmt.Errorf("unknown transition action %q", name)
}

// JobOutput returns the Job Output the job's applied outcome stored, or nil
// if none was. It fails with store.ErrNotFound for an unknown job.
func (s *Store) JobOutput(ctx context.Context, id job.ID) ([]byte, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	var out []byte
	found := false
	err := s.db.query(ctx, s.sql(`SELECT j.output FROM backwave.job j WHERE j.id = $1`), []any{int64(id)}, func(scan scanFunc) error {
		found = true
		return scan(&out)
	})
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("read the output of job %d", id), err)
	}
	if !found {
		return nil, fmt.Errorf("postgres: job %d: %w", id, store.ErrNotFound)
	}
	return out, nil
}

// logOneSQL writes one Transition Log entry for an Operator Action.
const logOneSQL = `INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt)
VALUES ($1, $2, $3, $4, $5, $6)`

func (s *Store) logOne(ctx context.Context, q querier, id job.ID, h jobHead, to job.State, via core.Via) error {
	if !s.opts.History.Records() {
		return nil
	}
	_, err := q.exec(ctx, s.sql(logOneSQL), int64(id), h.now.Time, h.state.String(), to.String(), via.String(), int32(h.attempt))
	if err != nil {
		return fmt.Errorf("transition: %w", err)
	}
	if h.attempt > store.TransitionTrimAttempt {
		_, err = q.exec(ctx, s.sql(`DELETE FROM backwave.job_transition t WHERE t.job_id = $1 AND t.seq <= (
    SELECT t2.seq FROM backwave.job_transition t2 WHERE t2.job_id = $1 ORDER BY t2.seq DESC OFFSET $2 LIMIT 1)
      AND NOT `+awaitedSQL("coalesce($3::timestamptz, now())")),
			int64(id), int32(store.TransitionLogCap), s.nowArg())
	}
	return err
}

// trimSQL is a DELETE that drops the oldest Transition Log entries of the
// jobs in CTE from (columns id, attempt) past store.TransitionTrimAttempt,
// keeping the newest TransitionLogCap-1 of those the statement's snapshot
// sees: with the one entry the same statement adds, the log holds at most
// TransitionLogCap, save the entries a Transition Observer still awaits
// (awaitedSQL). records is the parameter saying the log is written; $1 is
// the statement's now.
func trimSQL(from, records string) string {
	return `DELETE FROM backwave.job_transition t USING ` + from + ` x
    WHERE ` + records + `::bool AND x.attempt > ` + strconv.Itoa(store.TransitionTrimAttempt) + ` AND t.job_id = x.id
      AND t.seq <= (SELECT t2.seq FROM backwave.job_transition t2 WHERE t2.job_id = x.id
                    ORDER BY t2.seq DESC OFFSET ` + strconv.Itoa(store.TransitionLogCap-1) + ` LIMIT 1)
      AND NOT ` + awaitedSQL("coalesce($1::timestamptz, now())")
}

// awaitedSQL is true of a Transition Log entry t that a live Transition
// Observer registration (one seen since now minus
// store.ObserverRemoveAfter) was not yet walked past: the cap keeps it,
// so the log may outgrow the cap until the walk passes. Without a
// registration it is one probe of an empty table.
func awaitedSQL(now string) string {
	return `EXISTS (SELECT 1 FROM backwave.observer o
        WHERE o.seen_at > ` + now + ` - ` + strconv.FormatInt(store.ObserverRemoveAfter.Microseconds(), 10) + ` * interval '1 microsecond'
          AND (coalesce(t.xid, '0'::xid8), t.seq) > (o.cursor_xid, o.cursor_seq))`
}
