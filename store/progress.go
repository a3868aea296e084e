package store

import (
	"fmt"
	"math"
	"slices"

	"github.com/backwave/backwave/job"
)

// MaxProgressNoteBytes bounds the note of a progress report. The Shell cuts a
// longer note at a rune boundary and marks it, as it does Failure Detail;
// a store refuses one over the bound.
const MaxProgressNoteBytes = 256

// ProgressReport is one handler's progress, sent with the renewal of its
// Lease (RenewParams.Progress): no round trip of its own.
type ProgressReport struct {
	// Lease is the (job, Attempt) the progress is of; the fence of the
	// write.
	Lease job.Lease
	// Fraction is how much is done, from 0 to 1.
	Fraction float64
	// Note is a short text, valid UTF-8 without NUL, at most
	// MaxProgressNoteBytes.
	Note string
}

// validateProgress checks the progress of a renewal: each report names one
// of the renewed Leases, once, with a fraction in [0, 1] and a note within
// its bound.
func validateProgress(p RenewParams) error {
	seen := make(map[job.Lease]bool, len(p.Progress))
	for i, r := range p.Progress {
		switch {
		case !slices.Contains(p.Leases, r.Lease):
			return fmt.Errorf("%w: progress %d names %s, which the renewal does not", ErrInvalidParams, i, r.Lease)
		case seen[r.Lease]:
			return fmt.Errorf("%w: progress %d: a second report for %s", ErrInvalidParams, i, r.Lease)
		case math.IsNaN(r.Fraction) || r.Fraction < 0 || r.Fraction > 1:
			return fmt.Errorf("%w: progress %d for %s: fraction %v is not in [0, 1]", ErrInvalidParams, i, r.Lease, r.Fraction)
		case len(r.Note) > MaxProgressNoteBytes:
			return fmt.Errorf("%w: progress %d for %s: note of %d bytes is over the %d-byte limit", ErrInvalidParams, i, r.Lease, len(r.Note), MaxProgressNoteBytes)
		case !textOK(r.Note):
			return fmt.Errorf("%w: progress %d for %s: note is not valid UTF-8 text without NUL", ErrInvalidParams, i, r.Lease)
		}
		seen[r.Lease] = true
	}
	return nil
}
