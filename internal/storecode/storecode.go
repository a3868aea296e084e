// Package storecode holds the stored codes of states, causes and edge
// actions that the SQL adapters keeping them as integers (the Embedded
// Adapter and the MariaDB adapter) write. The codes are part of each
// adapter's schema (its migrations list them) and are fixed here, never
// taken from the order of a Go enum; SQL text writes the state codes it
// needs as literals (1 scheduled, 2 awaiting parent, 3 running).
package storecode

import (
	"fmt"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// States are the stored codes of job states; StateUnknown appears only as
// the origin of an insert in the Transition Log.
var States = map[job.State]int64{
	job.StateUnknown:        0,
	job.StateScheduled:      1,
	job.StateAwaitingParent: 2,
	job.StateRunning:        3,
	job.StateSucceeded:      4,
	job.StateDeadLettered:   5,
	job.StateCancelled:      6,
	job.StateQuarantined:    7,
}

// RetryCauses are the stored codes of Retry Causes.
var RetryCauses = map[job.RetryCause]int64{
	job.RetryCauseNone:          0,
	job.RetryCauseHandlerFailed: 1,
	job.RetryCauseLeaseExpired:  2,
}

// CancelCauses are the stored codes of cancel causes.
var CancelCauses = map[job.CancelCause]int64{
	job.CancelCauseNone:          0,
	job.CancelCauseOperator:      1,
	job.CancelCauseParentFailure: 2,
}

// Vias are the stored codes of the edges a Transition Log entry records.
var Vias = map[core.Via]int64{
	core.ViaInsert:        1,
	core.ViaClaim:         2,
	core.ViaSucceed:       3,
	core.ViaRetry:         4,
	core.ViaDeadLetter:    5,
	core.ViaExpire:        6,
	core.ViaRelinquish:    7,
	core.ViaQuarantine:    8,
	core.ViaCancel:        9,
	core.ViaRequeue:       10,
	core.ViaRelease:       11,
	core.ViaParentFailure: 12,
	core.ViaWorkflowRetry: 13,
	core.ViaSnooze:        14,
}

// Encode returns the stored code of v; ok is false for a value without one,
// a bug in the adapter (every value it writes comes from the tables above).
func Encode[K comparable](codes map[K]int64, v K) (c int64, ok bool) {
	c, ok = codes[v]
	return c, ok
}

// Decode is the inverse of Encode; an unknown code means the database holds
// data this build does not understand.
func Decode[K comparable](codes map[K]int64, what string, c int64) (K, error) {
	for k, v := range codes {
		if v == c {
			return k, nil
		}
	}
	var zero K
	return zero, fmt.Errorf("unknown stored %s code %d", what, c)
}
