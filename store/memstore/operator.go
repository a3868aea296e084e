package memstore

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// RequestCancel is the operator cancel. A Scheduled or Awaiting-Parent job
// becomes Cancelled at once, with cancel cause operator. A Running job keeps
// running with CancelRequested set: its worker learns of it at the next
// LeaseRenew (store.RenewCancelRequested) and cancels its handler
// cooperatively. Asking again is harmless. A terminal job fails with
// store.ErrIllegalTransition, an unknown one with store.ErrNotFound.
func (s *Store) RequestCancel(ctx context.Context, id job.ID) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, err := s.find(id)
	if err != nil {
		return err
	}
	switch st := r.job.State; st {
	case job.StateScheduled, job.StateAwaitingParent:
		r.job.CancelCause = job.CancelCauseOperator
		s.move(r, job.StateCancelled, core.ViaCancel, s.clock.Now(), "")
	case job.StateRunning:
		r.job.CancelRequested = true
	default:
		return fmt.Errorf("memstore: cancel job %d: it is %s: %w", id, st, store.ErrIllegalTransition)
	}
	return nil
}
