package store

import (
	"fmt"
	"strconv"
	"time"
)

// QueueRate is a Queue's Rate Limit: at most Limit jobs start per window of
// Period (the window rule is in the package doc, Rate Limit). The zero
// QueueRate is no Rate Limit.
type QueueRate struct {
	// Limit is how many claims a window allows; at least 1 (at most
	// MaxRateLimit) when Period is set.
	Limit int
	// Period is the window's length: from MinRatePeriod to MaxRatePeriod,
	// a whole number of microseconds (the SQL adapters' resolution).
	Period time.Duration
}

// Bounds of a QueueRate.
const (
	// MaxRateLimit is the largest Limit a QueueRate may have (what every
	// adapter stores as a 32-bit count).
	MaxRateLimit = 1<<31 - 1
	// MinRatePeriod is the shortest Period a QueueRate may have.
	MinRatePeriod = time.Millisecond
	// MaxRatePeriod is the longest Period a QueueRate may have.
	MaxRatePeriod = 366 * 24 * time.Hour
)

// IsZero reports whether r is no Rate Limit.
func (r QueueRate) IsZero() bool { return r == QueueRate{} }

// Validate accepts the zero QueueRate (none) and any Limit of 1 to
// MaxRateLimit per Period of MinRatePeriod to MaxRatePeriod in whole
// microseconds.
func (r QueueRate) Validate() error {
	switch {
	case r.IsZero():
		return nil
	case r.Limit < 1 || r.Limit > MaxRateLimit:
		return fmt.Errorf("%w: rate limit %d per %v (want 1 to %d)", ErrInvalidParams, r.Limit, r.Period, MaxRateLimit)
	case r.Period < MinRatePeriod || r.Period > MaxRatePeriod:
		return fmt.Errorf("%w: rate period %v (want %v to %v)", ErrInvalidParams, r.Period, MinRatePeriod, MaxRatePeriod)
	case r.Period%time.Microsecond != 0:
		return fmt.Errorf("%w: rate period %v is not a whole number of microseconds", ErrInvalidParams, r.Period)
	}
	return nil
}

// String renders the Rate as "N/period", or "none".
func (r QueueRate) String() string {
	if r.IsZero() {
		return "none"
	}
	return strconv.Itoa(r.Limit) + "/" + r.Period.String()
}

// WindowStart returns the start of the window of r's Period that holds t
// (the window rule of the package doc, Rate Limit). r must have a Period.
func (r QueueRate) WindowStart(t time.Time) time.Time {
	return time.UnixMicro(windowMicros(t.UnixMicro(), r.Period.Microseconds())).UTC()
}

// windowMicros returns the start, in microseconds since the Unix epoch,
// of the window of period µs that holds the instant at µs: at rounded down
// (towards minus infinity) to a multiple of period. period must be positive.
func windowMicros(at, period int64) int64 {
	q := at / period
	if at%period < 0 {
		q--
	}
	return q * period
}

// Budget is the rule one claim applies to a rated Queue, written once
// for every adapter: given the window the store last counted claims in
// (windowStart, zero if none) and its count, it returns how many jobs a claim
// at now may take, and the window start to record. A counted window before
// the one holding now is over (its count is forgotten); a counted window
// after it means a claim with an earlier clock reading than one already
// counted (a PostgreSQL transaction that started before the one that took
// the Queue's lock first), which may take nothing.
func (r QueueRate) Budget(windowStart time.Time, count int, now time.Time) (budget int, window time.Time) {
	cur := r.WindowStart(now)
	switch {
	case windowStart.IsZero() || windowStart.Before(cur):
		return r.Limit, cur
	case windowStart.Equal(cur):
		return max(0, r.Limit-count), cur
	default:
		return 0, windowStart
	}
}

// QueueSetRateParams are the params of Queues.QueueSetRate.
type QueueSetRateParams struct {
	Queue string
	// Rate is the Rate Limit; the zero QueueRate removes it.
	Rate QueueRate
	// Actor is recorded in the audit trail; empty means ActorSystem.
	Actor Actor
}

// Validate checks the params of QueueSetRate.
func (p QueueSetRateParams) Validate() error {
	if err := ValidateName("queue", p.Queue); err != nil {
		return err
	}
	if err := p.Actor.Validate(); err != nil {
		return err
	}
	return p.Rate.Validate()
}

// RateDetail is the Detail of setting a Rate Limit, e.g. "rate 10/1m0s" or
// "rate none".
func RateDetail(r QueueRate) string { return "rate " + r.String() }
