// Package cron parses the cron expression of a Recurring Schedule and
// computes its occurrence instants in a time zone, with an explicit policy
// for the hours daylight saving time skips or repeats.
//
// Parsing is delegated to github.com/netresearch/go-cron (a proven parser,
// used for nothing else), and so is matching the fields against a
// wall-clock reading, through the parsed schedule's documented Next method
// asked about times in UTC, where no clock jumps. The daylight saving logic
// is this package's own, because no library handles it the way cron users
// expect.
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
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
//
// Nor does it load a zone: callers above the boundary load a
// *time.Location (zone data comes from files) and pass it in.
package cron

import (
	"errors"
	"fmt"
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
	// fields is go-cron's schedule of a kindFields expression, asked only
	// for Next of times in UTC, which then are wall-clock readings.
	fields gocron.Schedule
	every  time.Duration
}

// parseOptions are the go-cron parser options: five fields with an optional
// leading seconds field, descriptors (@hourly, @every 1h, …), and the
// classic rule that a day matches when either restricted day field does.
// Left out, so rejected: the year field, H, and the L, W and # extensions.
const parseOptions = gocron.SecondOptional | gocron.Minute | gocron.Hour | gocron.Dom |
	gocron.Month | gocron.Dow | gocron.Descriptor | gocron.DowOrDom

// parser parses expressions; its schedules' Next searches at least as far
// as match does.
var parser = gocron.MustNewParser(parseOptions).WithMaxSearchYears(searchYears + 1)

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
	// go-cron takes a descriptor to be @every exactly when it has this
	// prefix, so the two parses agree on which kind an expression is.
	rest, every := strings.CutPrefix(text, "@every ")
	var d time.Duration
	if every {
		// go-cron rounds a duration down to whole seconds; refuse instead.
		var err error
		d, err = time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || d < time.Second || d%time.Second != 0 {
			return bad("@every needs a Go duration of whole seconds, at least 1s")
		}
	}
	parsed, err := parser.Parse(text)
	if err != nil {
		return bad("%v", err)
	}
	if every {
		return &Expr{text: text, kind: kindEvery, every: d}, nil
	}
	fixed, err := fixedTime(text)
	if err != nil {
		return bad("%v", err)
	}
	return &Expr{text: text, kind: kindFields, fixed: fixed, fields: parsed}, nil
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
		start, end := zoneBounds(lt)
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

// zoneBounds is t.ZoneBounds, except that the end is never at or before t.
// For the instants of a leap year's last UTC day that a zone's TZ footer
// rule serves (years after its last listed transition), Go computes the end
// of the year's last period as if the year had 365 days, at or before t
// (a Go bug, golang/go#81583), and nextFields would stop advancing. That
// period then lasts to the year's end: both of the rule's
// transitions of the year are behind t, and the year's end, where Go
// starts the next year's first period, is no change of offset.
func zoneBounds(t time.Time) (start, end time.Time) {
	start, end = t.ZoneBounds()
	if !end.IsZero() && !end.After(t) {
		end = time.Date(t.UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC).In(t.Location())
	}
	return start, end
}

// civil returns the local wall-clock reading of instant t at UTC offset off
// seconds, as a time in UTC: a calendar without zones or gaps.
func civil(t time.Time, off int) time.Time {
	return time.Unix(t.Unix()+int64(off), 0).UTC()
}

// match returns the first wall-clock time c (a civil time, see civil) with
// lo ≤ c, and c < hi when bounded, that the fields match, looking no
// further than searchYears past lo. go-cron's Next works in the zone of
// the time it is given; in UTC a wall-clock reading is all there is.
func (e *Expr) match(lo, hi time.Time, bounded bool) (time.Time, bool) {
	if e.fields == nil {
		return time.Time{}, false // the zero Expr matches nothing
	}
	from := lo.Truncate(time.Second)
	if from.Before(lo) {
		from = from.Add(time.Second)
	}
	// Next is strictly after its argument, in whole seconds.
	c := e.fields.Next(from.Add(-time.Second).UTC())
	if c.IsZero() || c.After(lo.AddDate(searchYears, 0, 0)) || (bounded && !c.Before(hi)) {
		return time.Time{}, false
	}
	return c.UTC(), true
}
