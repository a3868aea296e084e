package mariadb

import (
	"database/sql"
	"fmt"
	"slices"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// setCursor stores value as the Cursor of l's job, saved by l's Attempt at
// the transaction's now (migration/004_cursor.sql). The caller has checked
// the fence.
func (w *wtx) setCursor(l job.Lease, value []byte) error {
	if _, err := w.exec(`UPDATE backwave_job SET cursor_attempt = ?, cursor_value = ?, cursor_at = ? WHERE id = ?`,
		int64(l.Attempt), value, micros(w.now), int64(l.ID)); err != nil {
		return fmt.Errorf("job %d: cursor: %w", l.ID, err)
	}
	return nil
}

// setRenewedCursor stores the Cursor of cursors that names l, if one does;
// the caller has renewed l.
func (w *wtx) setRenewedCursor(l job.Lease, cursors []store.CursorSave) error {
	if k := slices.IndexFunc(cursors, func(c store.CursorSave) bool { return c.Lease == l }); k >= 0 {
		return w.setCursor(l, cursors[k].Value)
	}
	return nil
}

// cursorOf decodes the Cursor columns of jobCols.
func cursorOf(attempt sql.NullInt64, value []byte, at sql.NullInt64) *job.Cursor {
	if !attempt.Valid {
		return nil
	}
	if value == nil {
		value = []byte{}
	}
	return &job.Cursor{Attempt: job.Attempt(attempt.Int64), Value: value, At: fromMicros(at.Int64)}
}
