package store

import (
	"fmt"
	"maps"
	"unicode/utf8"
)

// MaxTraceContextBytes bounds a job's trace context: the bytes of all its
// keys and values together. A W3C traceparent and a modest tracestate take a
// few hundred.
const MaxTraceContextBytes = 2048

// ValidateTraceContext checks a job's trace context: keys not empty, keys and
// values valid UTF-8 without NUL, MaxTraceContextBytes in all. An error wraps
// ErrInvalidParams.
func ValidateTraceContext(tc map[string]string) error {
	n := 0
	for k, v := range tc {
		switch {
		case k == "":
			return fmt.Errorf("%w: trace context has an empty key", ErrInvalidParams)
		case !textOK(k) || !textOK(v):
			return fmt.Errorf("%w: trace context field %q is not valid UTF-8 text without NUL", ErrInvalidParams, k)
		}
		n += len(k) + len(v)
	}
	if n > MaxTraceContextBytes {
		return fmt.Errorf("%w: trace context of %d bytes is over the %d-byte limit", ErrInvalidParams, n, MaxTraceContextBytes)
	}
	return nil
}

// NormalTraceContext returns the trace context a store keeps for tc: a copy,
// or nil when tc is empty, so every adapter reads back "none" the same way.
func NormalTraceContext(tc map[string]string) map[string]string {
	if len(tc) == 0 {
		return nil
	}
	return maps.Clone(tc)
}

func textOK(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for i := range len(s) {
		if s[i] == 0 {
			return false
		}
	}
	return true
}
