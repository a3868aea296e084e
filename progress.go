package backwave

import (
	"fmt"
	"math"

	"github.com/backwave/backwave/store"
)

// MaxProgressNoteBytes bounds a progress note: ReportProgress cuts a longer
// one at a rune boundary and marks it, as Failure Detail is cut.
const MaxProgressNoteBytes = store.MaxProgressNoteBytes

// ReportProgress records how far this Attempt got: fraction from 0 (nothing
// done) to 1 (all done), and a short note, cut to MaxProgressNoteBytes at a
// rune boundary and marked. It makes no store call: the latest report
// travels with the next renewal of the Attempt's Lease (each
// HeartbeatInterval), which stores it only while this Attempt still holds
// the Lease, and the Monitor shows it as JobInfo.Progress. Reports between
// two renewals overwrite each other; one made after the last renewal is
// never stored. A fraction outside [0, 1], or NaN, is an error wrapping
// ErrInvalidParams and records nothing, as is a call on a Job no Pump runs.
func (j *Job[T]) ReportProgress(fraction float64, note string) error {
	switch {
	case math.IsNaN(fraction) || fraction < 0 || fraction > 1:
		return fmt.Errorf("backwave: report progress: %w: fraction %v is not in [0, 1]", ErrInvalidParams, fraction)
	case j.progress == nil:
		return fmt.Errorf("backwave: report progress: %w: job %d is not running under a Pump", ErrInvalidParams, j.ID)
	}
	j.progress.Report(fraction, note)
	return nil
}
