package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobGet returns the job, or an error wrapping store.ErrNotFound.
func (s *Store) JobGet(ctx context.Context, id job.ID) (job.Job, error) {
	if err := s.enter(ctx); err != nil {
		return job.Job{}, err
	}
	jobs, err := s.jobs(ctx, `SELECT `+jobColumns+` FROM backwave.job j WHERE j.id = $1`, int64(id))
	if err != nil {
		return job.Job{}, s.wrap(fmt.Sprintf("get job %d", id), err)
	}
	if len(jobs) == 0 {
		return job.Job{}, fmt.Errorf("postgres: job %d: %w", id, store.ErrNotFound)
	}
	return jobs[0], nil
}

const jobListSQL = `SELECT ` + jobColumns + ` FROM backwave.job j
WHERE (coalesce(cardinality($1::text[]), 0) = 0 OR j.state = ANY($1::text[]))
  AND ($2::text = '' OR j.queue = $2::text)
  AND ($3::text = '' OR j.wire_name = $3::text)
  AND ($4::bigint = 0 OR j.id < $4::bigint)
ORDER BY j.id DESC
LIMIT $5::int`

// JobList returns the jobs matching every filter in p, newest id first, at
// most p.PageLimit() of them, starting below p.BeforeID when it is set.
func (s *Store) JobList(ctx context.Context, p store.JobListParams) ([]job.Job, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	states := make([]string, len(p.States))
	for i, st := range p.States {
		states[i] = st.String()
	}
	jobs, err := s.jobs(ctx, jobListSQL, states, p.Queue, p.WireName, int64(p.BeforeID), int32(p.PageLimit()))
	if err != nil {
		return nil, s.wrap("list jobs", err)
	}
	return jobs, nil
}

// jobs runs a query selecting jobColumns.
func (s *Store) jobs(ctx context.Context, query string, args ...any) ([]job.Job, error) {
	var out []job.Job
	err := s.db.query(ctx, s.sql(query), args, func(scan scanFunc) error {
		var r jobRow
		if err := scan(r.dest()...); err != nil {
			return err
		}
		j, err := r.job()
		if err != nil {
			return err
		}
		out = append(out, j)
		return nil
	})
	return out, err
}

// JobCountByState counts jobs per state, in p.Queue only if it is set.
// States with no jobs are absent from the map.
func (s *Store) JobCountByState(ctx context.Context, p store.CountParams) (map[job.State]int, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := make(map[job.State]int)
	err := s.db.query(ctx, s.sql(`SELECT j.state, count(*) FROM backwave.job j
WHERE $1::text = '' OR j.queue = $1::text GROUP BY j.state`), []any{p.Queue}, func(scan scanFunc) error {
		var name string
		var n int
		if err := scan(&name, &n); err != nil {
			return err
		}
		st, err := job.ParseState(name)
		if err != nil {
			return err
		}
		out[st] = n
		return nil
	})
	if err != nil {
		return nil, s.wrap("count jobs", err)
	}
	return out, nil
}

// Transition is one entry of a job's Transition Log: at At, by Via, the job
// moved from From to State, its Attempt then being Attempt.
type Transition struct {
	At      time.Time
	From    job.State
	State   job.State
	Via     core.Via
	Attempt job.Attempt
	// FailureDetail is the diagnostic text a failed Attempt's outcome
	// carried; empty otherwise.
	FailureDetail string
}

// Edge returns the state edge the entry records.
func (t Transition) Edge() core.Edge { return core.Edge{From: t.From, To: t.State, Via: t.Via} }

// JobTransitions returns the job's Transition Log, oldest entry first: one
// entry per state change since insert. It fails with store.ErrNotFound for
// an unknown job.
func (s *Store) JobTransitions(ctx context.Context, id job.ID) ([]Transition, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if _, err := s.JobGet(ctx, id); err != nil {
		return nil, err
	}
	var out []Transition
	err := s.db.query(ctx, s.sql(`SELECT t.at, t.from_state, t.state, t.via, t.attempt, coalesce(t.failure_detail, '')
FROM backwave.job_transition t WHERE t.job_id = $1 ORDER BY t.seq`), []any{int64(id)}, func(scan scanFunc) error {
		var tr Transition
		var from, to, via string
		if err := scan(&tr.At, &from, &to, &via, &tr.Attempt, &tr.FailureDetail); err != nil {
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

// RequestCancel is the operator cancel. A Scheduled or Awaiting-Parent job
// becomes Cancelled at once, with cancel cause operator. A Running job keeps
// running with CancelRequested set: its worker learns of it at the next
// LeaseRenew (store.RenewCancelRequested) and cancels its handler
// cooperatively. Asking again is harmless. A terminal job fails with
// store.ErrIllegalTransition, an unknown one with store.ErrNotFound.
func (s *Store) RequestCancel(ctx context.Context, id job.ID) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	var state string
	found := false
	err := s.db.inTx(ctx, func(q querier) error {
		found = false
		err := q.query(ctx, s.sql(`SELECT j.state FROM backwave.job j WHERE j.id = $1 FOR UPDATE`), []any{int64(id)},
			func(scan scanFunc) error {
				found = true
				return scan(&state)
			})
		if err != nil || !found {
			return err
		}
		switch state {
		case job.StateScheduled.String(), job.StateAwaitingParent.String():
			_, err = q.exec(ctx, s.sql(`WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
cancelled AS (
    UPDATE backwave.job j SET state = 'cancelled', cancel_cause = 'operator', finalized_at = now.t
    FROM now WHERE j.id = $2
    RETURNING j.id, j.attempt, now.t AS now
)
INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt)
SELECT c.id, c.now, $3::text, 'cancelled', 'cancel', c.attempt FROM cancelled c`), s.nowArg(), int64(id), state)
		case job.StateRunning.String():
			_, err = q.exec(ctx, s.sql(`UPDATE backwave.job SET cancel_requested = true WHERE id = $1`), int64(id))
		}
		return err
	})
	if err != nil {
		return s.wrap(fmt.Sprintf("cancel job %d", id), err)
	}
	switch {
	case !found:
		return fmt.Errorf("postgres: job %d: %w", id, store.ErrNotFound)
	case state != job.StateScheduled.String() && state != job.StateAwaitingParent.String() && state != job.StateRunning.String():
		return fmt.Errorf("postgres: cancel job %d: it is %s: %w", id, state, store.ErrIllegalTransition)
	}
	return nil
}
