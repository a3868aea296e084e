package store

import (
	"fmt"

	"github.com/backwave/backwave/job"
)

// MaxCursorBytes bounds a stored Cursor (job.Cursor.Value). A store refuses
// a longer one with ErrInvalidParams and writes nothing of the call; the
// Shell refuses it earlier, when the handler saves it, with room left for
// the envelope of Encryption at Rest (CursorEnvelopeRoom).
const MaxCursorBytes = 64 << 10

// CursorEnvelopeRoom is the part of MaxCursorBytes kept for the envelope
// Encryption at Rest wraps a Cursor in: a handler's Cursor may take
// MaxCursorBytes - CursorEnvelopeRoom bytes.
const CursorEnvelopeRoom = 1 << 10

// CursorSave is one Attempt's Cursor to store: sent with a renewal of its
// Lease (RenewParams.Cursors) or with its outcome (Outcome.Cursor), fenced
// by the same (worker, Attempt) as the call that carries it.
type CursorSave struct {
	// Lease is the (job, Attempt) that saved the Cursor; the fence of the
	// write.
	Lease job.Lease
	// Value is the Cursor, at most MaxCursorBytes; never nil.
	Value []byte
}

// validateCursors checks the Cursors of a renewal: each names one of the
// renewed Leases, once, with a value within its bound.
func validateCursors(p RenewParams) error {
	seen := make(map[job.Lease]bool, len(p.Cursors))
	leases := make(map[job.Lease]bool, len(p.Leases))
	for _, l := range p.Leases {
		leases[l] = true
	}
	for i, c := range p.Cursors {
		switch {
		case !leases[c.Lease]:
			return fmt.Errorf("%w: cursor %d names %s, which the renewal does not", ErrInvalidParams, i, c.Lease)
		case seen[c.Lease]:
			return fmt.Errorf("%w: cursor %d: a second cursor for %s", ErrInvalidParams, i, c.Lease)
		}
		if err := validateCursor(c.Value); err != nil {
			return fmt.Errorf("cursor %d for %s: %w", i, c.Lease, err)
		}
		seen[c.Lease] = true
	}
	return nil
}

// validateCursor checks one Cursor value: present and within
// MaxCursorBytes.
func validateCursor(v []byte) error {
	switch {
	case v == nil:
		return fmt.Errorf("%w: a cursor without a value", ErrInvalidParams)
	case len(v) > MaxCursorBytes:
		return fmt.Errorf("%w: cursor of %d bytes is over the %d-byte limit", ErrInvalidParams, len(v), MaxCursorBytes)
	}
	return nil
}
