package store

import (
	"encoding/json"
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

// EncodeTraceContext renders a trace context as the JSON object text the SQL
// adapters store; "" for none.
func EncodeTraceContext(tc map[string]string) string {
	if len(tc) == 0 {
		return ""
	}
	b, err := json.Marshal(tc)
	if err != nil {
		// A map of strings always encodes: invalid UTF-8 is replaced.
		panic(fmt.Sprintf("store: encode trace context: %v", err))
	}
	return string(b)
}

// DecodeTraceContext reads what EncodeTraceContext wrote; "" is none (nil).
func DecodeTraceContext(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var tc map[string]string
	if err := json.Unmarshal([]byte(s), &tc); err != nil {
		return nil, fmt.Errorf("decode trace context: %w", err)
	}
	return NormalTraceContext(tc), nil
}
