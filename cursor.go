package backwave

import (
	"encoding/json"
	"fmt"

	"github.com/backwave/backwave/store"
)

// MaxCursorBytes bounds a Cursor as SaveCursor encodes it (JSON): the
// store's bound less the room Encryption at Rest keeps for its envelope.
const MaxCursorBytes = store.MaxCursorBytes - store.CursorEnvelopeRoom

// SaveCursor records v, encoded as JSON, as the job's Cursor: the one value
// a resumable job keeps of how far it got, which the next Attempt reads
// back with Cursor to resume from instead of starting over. A later call
// replaces an earlier one; a Cursor is never a log of steps nor a record of
// results to replay, only where to start.
//
// It makes no store call: the latest save travels with the next renewal of
// the Attempt's Lease (each HeartbeatInterval), which stores it only while
// this Attempt still holds the Lease, and a save no renewal delivered goes
// with the Attempt's outcome, so a Cursor saved just before the handler
// returns is stored with the outcome, whatever it is. A save from an
// Attempt that lost its Lease is never stored. A value that does not encode,
// or encodes to more than MaxCursorBytes, is an error wrapping
// ErrInvalidParams and records nothing, as is a call on a Job no Pump runs.
func (j *Job[T]) SaveCursor(v any) error {
	if j.cursorSink == nil {
		return fmt.Errorf("backwave: save cursor: %w: job %d is not running under a Pump", ErrInvalidParams, j.ID)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("backwave: save cursor: %w: %w", ErrInvalidParams, err)
	}
	if len(b) > MaxCursorBytes {
		return fmt.Errorf("backwave: save cursor: %w: cursor of %d bytes is over the %d-byte limit (MaxCursorBytes)", ErrInvalidParams, len(b), MaxCursorBytes)
	}
	j.cursorSink.Save(b)
	j.cursor = b
	return nil
}

// Cursor decodes the job's Cursor into v and reports whether there was
// one: the value this Attempt last saved with SaveCursor, or else the one
// an earlier Attempt of the job saved last, as the claim read it. With
// none it leaves v alone and returns false: the job starts from the
// beginning. A stored Cursor that does not decode into v is an error.
func (j *Job[T]) Cursor(v any) (bool, error) {
	if j.cursor == nil {
		return false, nil
	}
	if err := json.Unmarshal(j.cursor, v); err != nil {
		return true, fmt.Errorf("backwave: job %d: cursor does not decode into %T: %w", j.ID, v, err)
	}
	return true, nil
}
