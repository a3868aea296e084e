package sqlite

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/storecode"
	"github.com/backwave/backwave/job"
)

// The stored codes of states, causes and edge actions. They are part of the
// schema (migrations/0001_init.sql lists them) and are fixed here, never
// taken from the order of a Go enum. SQL text that must match a partial
// index writes the state codes as literals: 1 scheduled, 3 running.
const (
	codeScheduled int64 = 1
	codeRunning   int64 = 3
)

// The stored codes of states, causes and edge actions (package
// internal/storecode: the codes the Embedded Adapter and the MariaDB adapter
// share).
var (
	stateCodes       = storecode.States
	retryCauseCodes  = storecode.RetryCauses
	cancelCauseCodes = storecode.CancelCauses
	viaCodes         = storecode.Vias
)

// encode returns the stored code of v; a value without one is a bug in this
// package (every value it writes comes from the tables above).
func encode[K comparable](codes map[K]int64, v K) int64 {
	c, ok := storecode.Encode(codes, v)
	if !ok {
		panic(fmt.Sprintf("sqlite: no stored code for %v", v))
	}
	return c
}

// decode is the inverse of encode; an unknown code means the database holds
// data this build does not understand.
func decode[K comparable](codes map[K]int64, what string, c int64) (K, error) {
	k, err := storecode.Decode(codes, what, c)
	if err != nil {
		return k, fmt.Errorf("sqlite: %w", err)
	}
	return k, nil
}

func stateCode(s job.State) int64 { return encode(stateCodes, s) }

func viaCode(v core.Via) int64 { return encode(viaCodes, v) }

// micros stores a time as microseconds since the Unix epoch.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros reads a stored time, in UTC.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// fixedRetryCause reports whether moving along edge e sets the Retry Cause
// to one value whatever the job carried before, and which; otherwise the edge
// keeps the stored cause. It asks core.RetryCauseAfter, so the SQL that
// applies the rule ("set it to X" or "leave the column") never restates it.
func fixedRetryCause(e core.Edge) (job.RetryCause, bool) {
	a := core.RetryCauseAfter(e, job.RetryCauseHandlerFailed)
	b := core.RetryCauseAfter(e, job.RetryCauseLeaseExpired)
	if a != b {
		return job.RetryCauseNone, false
	}
	return a, true
}

// retryCauseArg is the value bound to "retry_cause = COALESCE(?, retry_cause)"
// for a job moving out of Running to state to by via.
func retryCauseArg(to job.State, via core.Via) any {
	if c, ok := fixedRetryCause(core.Edge{From: job.StateRunning, To: to, Via: via}); ok {
		return encode(retryCauseCodes, c)
	}
	return nil
}

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
