package shell

import (
	"fmt"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"
)

// TruncatedMark ends Failure Detail that was cut to fit its limit.
const TruncatedMark = "…[truncated]"

// TruncateDetail bounds Failure Detail to limit bytes. Invalid UTF-8 is
// replaced first (stores keep text). Text over the limit is cut at a rune
// boundary and ends with TruncatedMark; the result never exceeds limit bytes
// (below len(TruncatedMark) the mark itself does not fit and is left off). A
// limit of 0 or less means no bound.
func TruncateDetail(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if limit <= 0 || len(s) <= limit {
		return s
	}
	mark := TruncatedMark
	if limit < len(mark) {
		mark = ""
	}
	cut := limit - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// TimeoutDetail renders the Failure Detail of an Attempt that failed after
// its attempt timeout: it names ErrAttemptTimeout and the timeout, then the
// handler's own detail, if any.
func TimeoutDetail(timeout time.Duration, detail string) string {
	s := fmt.Sprintf("%v: the Attempt ran past its %v timeout", ErrAttemptTimeout, timeout)
	if detail != "" {
		s += ": " + detail
	}
	return s
}

// PanicDetail renders a recovered panic value and the stack of the goroutine
// that panicked (call it from the deferred recover) as Failure Detail.
func PanicDetail(v any) string {
	return fmt.Sprintf("panic: %v\n\n%s", v, debug.Stack())
}
