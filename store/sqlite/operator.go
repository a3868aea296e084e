package sqlite

import (
	"context"
	"database/sql"
	"errors"
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
	return s.write(ctx, "cancel job", func(tx *sql.Tx) error {
		var code, attempt int64
		err := tx.QueryRowContext(ctx, s.q.jobState, int64(id)).Scan(&code, &attempt)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("job %d: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		st, err := decode(stateCodes, "state", code)
		if err != nil {
			return err
		}
		switch st {
		case job.StateScheduled, job.StateAwaitingParent:
			now := micros(s.clock.Now())
			if _, err := tx.ExecContext(ctx, s.q.cancelNow, stateCode(job.StateCancelled),
				encode(cancelCauseCodes, job.CancelCauseOperator), now, int64(id)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, s.q.transition, int64(id), now, code, stateCode(job.StateCancelled),
				viaCode(core.ViaCancel), attempt, nil)
			return err
		case job.StateRunning:
			_, err := tx.ExecContext(ctx, s.q.requestCancel, int64(id))
			return err
		default:
			return fmt.Errorf("job %d is %s: %w", id, st, store.ErrIllegalTransition)
		}
	})
}
