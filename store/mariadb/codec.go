package mariadb

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// The stored codes of states, causes and edge actions. They are part of the
// schema (migration/001_init.sql lists them) and are fixed here, never
// taken from the order of a Go enum; SQL text writes the state codes it
// needs as literals (1 scheduled, 2 awaiting parent, 3 running), the codes
// the Embedded Adapter stores too.
var stateCodes = map[job.State]int64{
	job.StateUnknown:        0, // only as the origin of an insert in the Transition Log
	job.StateScheduled:      1,
	job.StateAwaitingParent: 2,
	job.StateRunning:        3,
	job.StateSucceeded:      4,
	job.StateDeadLettered:   5,
	job.StateCancelled:      6,
	job.StateQuarantined:    7,
}

var retryCauseCodes = map[job.RetryCause]int64{
	job.RetryCauseNone:          0,
	job.RetryCauseHandlerFailed: 1,
	job.RetryCauseLeaseExpired:  2,
}

var cancelCauseCodes = map[job.CancelCause]int64{
	job.CancelCauseNone:          0,
	job.CancelCauseOperator:      1,
	job.CancelCauseParentFailure: 2,
}

var viaCodes = map[core.Via]int64{
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
}

// encode returns the stored code of v; a value without one is a bug in this
// package (every value it writes comes from the tables above).
func encode[K comparable](codes map[K]int64, v K) int64 {
	c, ok := codes[v]
	if !ok {
		panic(fmt.Sprintf("mariadb: no stored code for %v", v))
	}
	return c
}

// decode is the inverse of encode; an unknown code means the file holds data
// this build does not understand.
func decode[K comparable](codes map[K]int64, what string, c int64) (K, error) {
	for k, v := range codes {
		if v == c {
			return k, nil
		}
	}
	var zero K
	return zero, fmt.Errorf("mariadb: unknown stored %s code %d", what, c)
}

func stateCode(s job.State) int64 { return encode(stateCodes, s) }

func viaCode(v core.Via) int64 { return encode(viaCodes, v) }

// micros stores a time as microseconds since the Unix epoch.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros reads a stored time, in UTC.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// nullString stores an empty string as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullBytes stores an empty payload as NULL.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
