package postgres

import (
	"context"
	"fmt"

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
	err := s.db.query(ctx, s.sql(`SELECT t.at, t.from_state, t.state, t.via, t.attempt, coalesce(t.failure_detail, '')
FROM backwave.job_transition t WHERE t.job_id = $1 ORDER BY t.seq`), []any{int64(id)}, func(scan scanFunc) error {
		var tr store.Transition
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
