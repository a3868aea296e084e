package store

import (
	"fmt"
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

// ValidateTime checks that t lies in years MinYear to MaxYear in UTC; what
// names t in the error.
func ValidateTime(what string, t time.Time) error {
	if y := t.UTC().Year(); y < MinYear || y > MaxYear {
		return fmt.Errorf("%w: %s %s is outside years %d to %d (UTC)", ErrInvalidParams, what, t.UTC().Format(time.RFC3339), MinYear, MaxYear)
	}
	return nil
}

// ValidateName checks a Queue name or Wire Name: non-empty, valid UTF-8, at
// most MaxNameLen bytes, no control characters or spaces at either end.
func ValidateName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty %s", ErrInvalidParams, kind)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %s %.32q… is longer than %d bytes", ErrInvalidParams, kind, name, MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalidParams, kind, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: %s %q contains a control character", ErrInvalidParams, kind, name)
		}
	}
	if name[0] == ' ' || name[len(name)-1] == ' ' {
		return fmt.Errorf("%w: %s %q has leading or trailing spaces", ErrInvalidParams, kind, name)
	}
	return nil
}

// Validate checks the params of JobInsertMany.
func (p InsertManyParams) Validate() error {
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
	}
	return nil
}

// checkOutcome rejects an outcome the Core could not have decided: its
// (State, Via) must be an edge a finished Attempt takes out of Running, and
// only a retry may carry a Retry Cause (core.Decide).
func checkOutcome(o core.Outcome) error {
	switch o.Via {
	case core.ViaSucceed, core.ViaRetry, core.ViaDeadLetter, core.ViaQuarantine, core.ViaCancel:
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
