// Package cron parses the cron expression of a Recurring Schedule and
// computes its occurrence instants in a time zone, with an explicit policy
// for the hours daylight saving time skips or repeats.
//
// Parsing is delegated to github.com/netresearch/go-cron (a proven parser,
// used for nothing else); the occurrence logic is this package's own,
// because no library handles daylight saving the way cron users expect.
// The policy is Vixie/ISC cron's:
//
//   - A fixed-time expression (neither its minute nor its hour field starts
//     with '*') fires at local wall-clock times. A local time the clocks
//     skip fires once, at the first instant after the gap; a local time the
//     clocks repeat fires once, at its first instant.
//   - A wildcard expression (its minute or hour field starts with '*', as in
//     "*/15 * * * *" or "0 * * * *", or @hourly) follows real time: it fires
//     at every instant whose local time matches — twice in a repeated hour,
//     not at all in a skipped one.
//   - @every d fires at every whole multiple of d since the Unix epoch,
//     whatever the zone.
//
// The package sits below the determinism boundary: it reads no clock and
// loads no zone. Callers above the boundary load a *time.Location (zone
// data comes from files) and pass it in.
package cron

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"

	gocron "github.com/netresearch/go-cron"
)

// ErrInvalid is wrapped by Parse for an expression it rejects.
var ErrInvalid = errors.New("cron: invalid expression")

// MaxLen bounds an expression, in bytes.
const MaxLen = 256

// searchYears bounds how far Next looks for an occurrence: an expression
// that matches no day within it (such as "0 0 30 2 *") has none.
const searchYears = 10

// kind says how an Expr's occurrences are defined.
type kind uint8

const (
	kindFields kind = iota + 1 // second … day-of-week fields, in local time
	kindEvery                  // @every d: multiples of d since the epoch
)

// Expr is a parsed cron expression. It is immutable and safe for concurrent
// use.
type Expr struct {
	text string
	kind kind
	// fixed marks a fixed-time expression (see the package doc).
	fixed bool
	// Bit sets of the fields: bit v set means value v matches.
	second, minute, hour, dom, month, dow uint64
	// domStar and dowStar mark a day field written as a wildcard; when
	// both day fields are restricted, a day matches if either does.
	domStar, dowStar bool
	every            time.Duration
}

// parseOptions are the go-cron parser options: five fields with an optional
// leading seconds field, descriptors (@hourly, @every 1h, …), and the
// classic rule that a day matches when either restricted day field does.
const parseOptions = gocron.SecondOptional | gocron.Minute | gocron.Hour | gocron.Dom |
	gocron.Month | gocron.Dow | gocron.Descriptor | gocron.DowOrDom

// starBit is go-cron's marker of a field written as a wildcard.
const starBit = 1 << 63

// Parse parses a cron expression: five fields (minute hour day-of-month
// month day-of-week), or six with a leading seconds field; or a descriptor:
// @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly, or
// @every with a Go duration of at least one second in whole seconds. The
// zone is not part of the expression: a "TZ=" or "CRON_TZ=" prefix is
// rejected. Errors wrap ErrInvalid.
func Parse(spec string) (*Expr, error) {
	text := strings.TrimSpace(spec)
	bad := func(format string, args ...any) (*Expr, error) {
		return nil, fmt.Errorf("%w %q: %s", ErrInvalid, spec, fmt.Sprintf(format, args...))
	}
	switch {
	case text == "":
		return bad("empty")
	case len(text) > MaxLen:
		return bad("longer than %d bytes", MaxLen)
	case strings.HasPrefix(text, "TZ=") || strings.HasPrefix(text, "CRON_TZ="):
		return bad("a time zone prefix is not part of the expression; give the zone separately")
	}
	if rest, ok := strings.CutPrefix(text, "@every "); ok {
		// go-cron rounds a duration down to whole seconds; refuse instead.
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || d < time.Second || d%time.Second != 0 {
			return bad("@every needs a Go duration of whole seconds, at least 1s")
		}
	}
	parsed, err := gocron.MustNewParser(parseOptions).Parse(text)
	if err != nil {
		return bad("%v", err)
	}
	e := &Expr{text: text}
	switch s := parsed.(type) {
	case gocron.ConstantDelaySchedule:
		if s.Delay < time.Second || s.Delay%time.Second != 0 {
			return bad("@every needs a whole number of seconds, at least 1s")
		}
		e.kind, e.every = kindEvery, s.Delay
		return e, nil
	case *gocron.SpecSchedule:
		if len(s.DomConstraints) > 0 || len(s.DowConstraints) > 0 || s.Year != nil {
			return bad("extended syntax is not supported")
		}
		e.kind = kindFields
		e.second, e.minute, e.hour = s.Second&^starBit, s.Minute&^starBit, s.Hour&^starBit
		e.dom, e.month = s.Dom&^starBit, s.Month&^starBit
		e.dow = gocron.NormalizeDOW(s.Dow &^ starBit)
		e.domStar, e.dowStar = s.Dom&starBit != 0, s.Dow&starBit != 0
	default:
		return bad("unsupported schedule type %T", parsed)
	}
	e.fixed, err = fixedTime(text)
	if err != nil {
		return bad("%v", err)
	}
	if e.second == 0 || e.minute == 0 || e.hour == 0 || e.dom == 0 || e.month == 0 || e.dow == 0 {
		return bad("a field matches no value")
	}
	return e, nil
}

// MustParse is Parse for expressions known to be valid; it panics on an
// error.
func MustParse(spec string) *Expr {
	e, err := Parse(spec)
	if err != nil {
		panic(err)
	}
	return e
}

// fixedTime reports whether a field expression (not @every) is fixed-time:
// neither its minute nor its hour field starts with '*'. Of the
// descriptors only @hourly is a wildcard.
func fixedTime(text string) (bool, error) {
	if strings.HasPrefix(text, "@") {
		return text != "@hourly", nil
	}
	f := strings.Fields(text)
	switch len(f) {
	case 5:
		f = f[0:2]
	case 6:
		f = f[1:3]
	default:
		return false, fmt.Errorf("want 5 or 6 fields, found %d", len(f))
	}
	return !strings.HasPrefix(f[0], "*") && !strings.HasPrefix(f[1], "*"), nil
}

// String returns the expression as parsed (surrounding space trimmed).
func (e *Expr) String() string { return e.text }

// FixedTime reports whether the expression fires at fixed local times (so a
// skipped local time fires after the gap and a repeated one fires once),
// rather than following real time.
func (e *Expr) FixedTime() bool { return e.kind == kindFields && e.fixed }

// Every returns d for an @every d expression, and 0 otherwise.
func (e *Expr) Every() time.Duration { return e.every }

// Next returns the first occurrence strictly after after, in zone loc (UTC
// if nil), or the zero Time if there is none within ten years. The result
// is in loc, with no monotonic clock reading.
func (e *Expr) Next(after time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	after = after.Round(0)
	var next time.Time
	if e.kind == kindEvery {
		d := int64(e.every / time.Second)
		next = time.Unix((floorDiv(after.Unix(), d)+1)*d, 0)
	} else {
		next = e.nextFields(after, loc)
	}
	if next.IsZero() {
		return next
	}
	return next.In(loc)
}

// floorDiv is a/b rounded toward minus infinity, b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// nextFields walks the zone's periods of constant UTC offset from after.
// Within a period local time and real time move together, so the next
// matching local time is found in a plain, offset-free calendar. At a
// period's start it applies the daylight saving policy: for a fixed-time
// expression, a match inside a skipped span of local time fires at the
// period's first instant, and local times the previous period already
// showed do not fire again.
func (e *Expr) nextFields(after time.Time, loc *time.Location) time.Time {
	t := after.Truncate(time.Second).Add(time.Second)
	limit := t.AddDate(searchYears, 0, 0)
	for !t.After(limit) {
		lt := t.In(loc)
		_, off := lt.Zone()
		start, end := lt.ZoneBounds()
		lo := civil(t, off)
		if e.fixed && !start.IsZero() {
			_, prev := start.Add(-time.Second).In(loc).Zone()
			switch {
			case prev < off && t.Equal(start):
				// Local time jumped forward at start: a match in the
				// skipped span fires now, once.
				if _, ok := e.match(civil(start, prev), civil(start, off), true); ok {
					return start
				}
			case prev > off:
				// Local time jumped back at start: the repeated span
				// already fired in the previous period.
				if rep := civil(start, prev); lo.Before(rep) {
					lo = rep
				}
			}
		}
		var hi time.Time
		if !end.IsZero() {
			hi = civil(end, off)
		}
		if c, ok := e.match(lo, hi, !end.IsZero()); ok {
			return c.Add(-time.Duration(off) * time.Second)
		}
		if end.IsZero() {
			return time.Time{}
		}
		t = end
	}
	return time.Time{}
}

// civil returns the local wall-clock reading of instant t at UTC offset off
// seconds, as a time in UTC: a calendar without zones or gaps.
func civil(t time.Time, off int) time.Time {
	return time.Unix(t.Unix()+int64(off), 0).UTC()
}

// match returns the first wall-clock time c (a civil time, see civil) with
// lo ≤ c, and c < hi when bounded, that the fields match.
func (e *Expr) match(lo, hi time.Time, bounded bool) (time.Time, bool) {
	c := lo
	if c.Nanosecond() != 0 {
		c = c.Truncate(time.Second).Add(time.Second)
	}
	limit := lo.AddDate(searchYears, 0, 0)
	for (!bounded || c.Before(hi)) && !c.After(limit) {
		y, mo, d := c.Date()
		h, mi, s := c.Clock()
		if e.month&(1<<uint(mo)) == 0 {
			c = time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if !e.dayMatches(c) {
			c = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		nh, ok := nextBit(e.hour, h, 23)
		if !ok {
			c = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if nh != h {
			c = time.Date(y, mo, d, nh, 0, 0, 0, time.UTC)
			continue
		}
		nm, ok := nextBit(e.minute, mi, 59)
		if !ok {
			c = time.Date(y, mo, d, h+1, 0, 0, 0, time.UTC)
			continue
		}
		if nm != mi {
			c = time.Date(y, mo, d, h, nm, 0, 0, time.UTC)
			continue
		}
		ns, ok := nextBit(e.second, s, 59)
		if !ok {
			c = time.Date(y, mo, d, h, mi+1, 0, 0, time.UTC)
			continue
		}
		if ns != s {
			c = time.Date(y, mo, d, h, mi, ns, 0, time.UTC)
			continue
		}
		return c, true
	}
	return time.Time{}, false
}

// dayMatches applies the day fields to civil time c: both must match,
// unless both are restricted, when either may.
func (e *Expr) dayMatches(c time.Time) bool {
	dom := e.dom&(1<<uint(c.Day())) != 0
	dow := e.dow&(1<<uint(c.Weekday())) != 0
	if !e.domStar && !e.dowStar {
		return dom || dow
	}
	return dom && dow
}

// nextBit returns the smallest v with from ≤ v ≤ max whose bit is set.
func nextBit(set uint64, from, max int) (int, bool) {
	m := set >> uint(from) << uint(from)
	m &= (1 << uint(max+1)) - 1
	if m == 0 {
		return 0, false
	}
	return bits.TrailingZeros64(m), true
}
