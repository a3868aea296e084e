package mariadb

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/storecode"
	"github.com/backwave/backwave/job"
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
		panic(fmt.Sprintf("mariadb: no stored code for %v", v))
	}
	return c
}

// decode is the inverse of encode; an unknown code means the database holds
// data this build does not understand.
func decode[K comparable](codes map[K]int64, what string, c int64) (K, error) {
	k, err := storecode.Decode(codes, what, c)
	if err != nil {
		return k, fmt.Errorf("mariadb: %w", err)
	}
	return k, nil
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
