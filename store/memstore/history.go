package memstore

import (
	"bytes"
	"context"
	"slices"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobTransitions returns the job's Transition Log, oldest entry first: one
// entry per state change since insert under the Job History Policy, the
// newest store.TransitionLogCap of them. It fails with store.ErrNotFound for
// an unknown job.
func (s *Store) JobTransitions(ctx context.Context, id job.ID) ([]store.Transition, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, err := s.find(id)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(r.log)
	for i := range out {
		out[i].Seq = r.seqs[i]
	}
	return out, nil
}

// JobOutput returns the Job Output the job's applied outcome stored, or nil
// if none was. It fails with store.ErrNotFound for an unknown job.
func (s *Store) JobOutput(ctx context.Context, id job.ID) ([]byte, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, err := s.find(id)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(r.output), nil
}
