package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// MaxNameLen bounds a Queue name or Wire Name, in bytes.
const MaxNameLen = 128

// MinYear and MaxYear bound, in UTC, every time a caller gives the store: a
// job's due time, a Reschedule's new time, a job filter's created range.
// Every adapter represents every instant of years MinYear to MaxYear (SQLite
// as int64 microseconds since the Unix epoch, PostgreSQL as timestamptz),
// and a time outside them is ErrInvalidParams on every adapter alike —
// checked here, before any adapter could wrap, clamp or refuse it its own
// way.
const (
	MinYear = 1
	MaxYear = 9999
)

// MaxEchoBytes bounds how much of a caller's text an error message repeats:
// a longer text is cut at a character boundary and marked as cut.
const MaxEchoBytes = 32

// Echo quotes s for an error message, as Go's %q would, clipped to
// MaxEchoBytes bytes and followed by "…" when it was cut: the one rule for
// repeating input in errors (names, Cron, Zone, key ids, Schema Names), so
// a 10 KB input never makes a 10 KB error. Invalid UTF-8 is escaped.
func Echo(s string) string {
	cut := ClipText(s, MaxEchoBytes)
	if len(cut) < len(s) {
		return strconv.Quote(cut) + "…"
	}
	return strconv.Quote(s)
}

// ClipText returns s cut to at most n bytes at a character boundary (an
// invalid byte counts as one character), without a mark.
func ClipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := 0
	for end < len(s) {
		_, size := utf8.DecodeRuneInString(s[end:])
		if end+size > n {
			break
		}
		end += size
	}
	return s[:end]
}

// ValidateText checks that a text is valid UTF-8, so every JSON printed of
// it is valid; what names the text. Enqueue and the backwave command check
// job payloads with it before they reach a store: the store itself keeps a
// payload as opaque bytes (Encryption at Rest stores ciphertext there).
func ValidateText(what string, b []byte) error {
	if !utf8.Valid(b) {
		return fmt.Errorf("%w: %s is not valid UTF-8 (invalid byte at offset %d)", ErrInvalidParams, what, invalidAt(b))
	}
	return nil
}

// invalidAt returns the offset of b's first invalid UTF-8 byte.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// reservedSchemas are the schemas and databases an engine keeps for
// itself: a store placed there is left out of a plain dump (pg_dump skips
// information_schema and pg_*) or mixed with the engine's own catalogue.
var reservedSchemas = []string{"information_schema", "performance_schema", "mysql", "sys"}

// CheckSchemaName refuses a Schema Name that is reserved or a system
// schema on any SQL engine BackWave runs on: information_schema, every
// name starting with pg_ or sqlite_, and MariaDB's performance_schema,
// mysql and sys, compared case-insensitively. Each SQL adapter calls it beside its own
// identifier rule; the error wraps ErrInvalidParams.
func CheckSchemaName(name string) error {
	lower := strings.ToLower(name)
	if strings.HasPrefix(lower, "pg_") {
		return fmt.Errorf("%w: schema name %s: names starting with pg_ are PostgreSQL's system schemas", ErrInvalidParams, Echo(name))
	}
	if strings.HasPrefix(lower, "sqlite_") {
		return fmt.Errorf("%w: schema name %s: names starting with sqlite_ are SQLite's own tables", ErrInvalidParams, Echo(name))
	}
	for _, r := range reservedSchemas {
		if lower == r {
			return fmt.Errorf("%w: schema name %s is a reserved system schema (%s, pg_*)", ErrInvalidParams, Echo(name), strings.Join(reservedSchemas, ", "))
		}
	}
	return nil
}

// ValidateTime checks that t lies in years MinYear to MaxYear in UTC; what
// names t in the error.
func ValidateTime(what string, t time.Time) error {
	if y := t.UTC().Year(); y < MinYear || y > MaxYear {
		return fmt.Errorf("%w: %s %s is outside years %d to %d (UTC)", ErrInvalidParams, what, t.UTC().Format(time.RFC3339), MinYear, MaxYear)
	}
	return nil
}

// validateText checks text a store keeps: at most limit bytes of valid
// UTF-8 without control characters.
func validateText(kind, s string, limit int) error {
	switch {
	case len(s) > limit:
		return fmt.Errorf("%w: %s %s is longer than %d bytes", ErrInvalidParams, kind, Echo(s), limit)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s %s is not valid UTF-8", ErrInvalidParams, kind, Echo(s))
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: %s %s contains a control character", ErrInvalidParams, kind, Echo(s))
		}
	}
	return nil
}

// ValidateName checks a Queue name or Wire Name: non-empty, valid UTF-8, at
// most MaxNameLen bytes, no control characters or spaces at either end.
func ValidateName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty %s", ErrInvalidParams, kind)
	}
	if err := validateText(kind, name, MaxNameLen); err != nil {
		return err
	}
	if name[0] == ' ' || name[len(name)-1] == ' ' {
		return fmt.Errorf("%w: %s %s has leading or trailing spaces", ErrInvalidParams, kind, Echo(name))
	}
	return nil
}

// Validate checks the params of JobInsertMany.
func (p InsertManyParams) Validate() error {
	if err := p.Actor.Validate(); err != nil {
		return err
	}
	for i, j := range p.Jobs {
		if err := ValidateName("wire name", j.WireName); err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
		if err := ValidateName("queue", j.Queue); err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
		if len(j.Payload) > MaxPayloadBytes {
			return fmt.Errorf("job %d: %w: payload of %d bytes is over the %d-byte limit", i, ErrInvalidParams, len(j.Payload), MaxPayloadBytes)
		}
		if j.MaxAttempts < 1 {
			return fmt.Errorf("job %d: %w: MaxAttempts %d is below 1", i, ErrInvalidParams, j.MaxAttempts)
		}
		if err := ValidateTime("due time", j.ScheduledAt); err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
		for _, t := range j.Tags {
			if err := t.Validate(); err != nil {
				return fmt.Errorf("job %d: %w: %w", i, ErrInvalidParams, err)
			}
		}
		if err := ValidateTraceContext(j.TraceContext); err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
		if err := ValidateConcurrencyKey(j.ConcurrencyKey); err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
	}
	if err := validateUnique(p.Jobs); err != nil {
		return err
	}
	return validateDependencies(p.Jobs)
}

// Validate checks the params of JobClaim.
func (p ClaimParams) Validate() error {
	if p.Worker == "" {
		return fmt.Errorf("%w: claim without a worker id", ErrInvalidParams)
	}
	if p.Limit < 1 {
		return fmt.Errorf("%w: claim limit %d is below 1", ErrInvalidParams, p.Limit)
	}
	if len(p.Queues) == 0 {
		return fmt.Errorf("%w: claim names no queue", ErrInvalidParams)
	}
	if err := validateSkip(p.Skip); err != nil {
		return err
	}
	return validateLeaseDuration(p.LeaseDuration)
}

// Validate checks the params of LeaseRenew.
func (p RenewParams) Validate() error {
	if p.Worker == "" {
		return fmt.Errorf("%w: renew without a worker id", ErrInvalidParams)
	}
	if err := validateProgress(p); err != nil {
		return err
	}
	if err := validateCursors(p); err != nil {
		return err
	}
	return validateLeaseDuration(p.LeaseDuration)
}

// Validate checks the params of OutcomeReport.
func (p ReportParams) Validate() error {
	if p.Worker == "" {
		return fmt.Errorf("%w: report without a worker id", ErrInvalidParams)
	}
	for i, o := range p.Outcomes {
		if err := checkOutcome(o.Outcome); err != nil {
			return fmt.Errorf("outcome %d for %s: %w", i, o.Lease, err)
		}
		if o.RetryDelay < 0 {
			return fmt.Errorf("%w: outcome %d for %s has negative retry delay", ErrInvalidParams, i, o.Lease)
		}
		for _, t := range o.TagDelta {
			if err := t.Validate(); err != nil {
				return fmt.Errorf("outcome %d: %w: %w", i, ErrInvalidParams, err)
			}
		}
		if o.Cursor != nil {
			if err := validateCursor(o.Cursor); err != nil {
				return fmt.Errorf("outcome %d for %s: %w", i, o.Lease, err)
			}
		}
	}
	return nil
}

// checkOutcome rejects an outcome the Core could not have decided: its
// (State, Via) must be an edge a finished Attempt takes out of Running, and
// only a retry may carry a Retry Cause, and the Terminal Cause fits the
// outcome's state: Dead-Lettered carries ceiling reached or permanent
// failure, Quarantined no handler or undecodable payload, every other
// state none (core.Decide, core.TerminalCauseAfter).
func checkOutcome(o core.Outcome) error {
	switch o.Via {
	case core.ViaSucceed, core.ViaRetry, core.ViaDeadLetter, core.ViaQuarantine, core.ViaCancel:
	case core.ViaSnooze:
		if err := core.CheckSnoozeDelay(o.RetryDelay); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidParams, err)
		}
	default:
		return fmt.Errorf("%w: %s is not an outcome", ErrInvalidParams, o.Via)
	}
	if err := core.CheckEdge(job.StateRunning, o.State, o.Via); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidParams, err)
	}
	if o.Via == core.ViaRetry && o.RetryCause != job.RetryCauseHandlerFailed {
		return fmt.Errorf("%w: a retry carries Retry Cause %q, want %q", ErrInvalidParams, o.RetryCause, job.RetryCauseHandlerFailed)
	}
	if o.Via != core.ViaRetry && o.RetryCause != job.RetryCauseNone {
		return fmt.Errorf("%w: a %s outcome carries Retry Cause %q", ErrInvalidParams, o.Via, o.RetryCause)
	}
	if !o.TerminalCause.Fits(o.State) {
		if o.TerminalCause == job.TerminalCauseNone {
			return fmt.Errorf("%w: a %s outcome carries no Terminal Cause", ErrInvalidParams, o.State)
		}
		return fmt.Errorf("%w: a %s outcome carries Terminal Cause %q, which belongs to %s", ErrInvalidParams, o.State, o.TerminalCause, o.TerminalCause.State())
	}
	return nil
}

// Validate checks the params of LeaseExpire.
func (p ExpireParams) Validate() error {
	if p.Limit < 0 {
		return fmt.Errorf("%w: expire limit %d is negative", ErrInvalidParams, p.Limit)
	}
	return nil
}

// Validate checks the params of LeaseRelinquish.
func (p RelinquishParams) Validate() error {
	if p.Worker == "" {
		return fmt.Errorf("%w: relinquish without a worker id", ErrInvalidParams)
	}
	return nil
}

// Validate checks the params of QueueSetLimit.
func (p QueueSetLimitParams) Validate() error {
	if err := ValidateName("queue", p.Queue); err != nil {
		return err
	}
	if err := p.Actor.Validate(); err != nil {
		return err
	}
	if p.Limit < 0 {
		return fmt.Errorf("%w: concurrency limit %d is negative", ErrInvalidParams, p.Limit)
	}
	return nil
}

// Validate checks a Queue name and the Actor.
func (p QueueParams) Validate() error {
	if err := ValidateName("queue", p.Queue); err != nil {
		return err
	}
	return p.Actor.Validate()
}

// Validate checks the filter of a JobList call.
func (p JobListParams) Validate() error { return p.JobFilter.Validate() }

// Validate checks the filter of a TagFacet call.
func (p TagFacetParams) Validate() error { return p.JobFilter.Validate() }

// PageLimit returns the effective page size of a JobList call.
func (p JobListParams) PageLimit() int {
	if p.Limit <= 0 {
		return 100
	}
	return min(p.Limit, 10_000)
}

func validateLeaseDuration(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: lease duration %v is not positive", ErrInvalidParams, d)
	}
	return nil
}
