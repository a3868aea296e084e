package cron

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The differential test: Next against a deliberately simple twin that steps
// real time one minute (or one second) at a time, reads the wall clock in
// the zone and applies the daylight saving policy by remembering what it
// has seen — no zone periods, no calendar jumps, no bit tricks. The twin
// matches fields with sets computed from the generated expression, not
// from the parser, so the parse is checked too.

// field is one generated cron field: its text and the values it matches.
type field struct {
	text string
	set  map[int]bool
	star bool // written "*": a day field written so does not restrict
}

// genField draws a field over [lo, hi], biased toward values in bias.
func genField(r *rand.Rand, lo, hi int, bias []int) field {
	f := field{set: map[int]bool{}}
	pick := func() int {
		if len(bias) > 0 && r.IntN(3) > 0 {
			return bias[r.IntN(len(bias))]
		}
		return lo + r.IntN(hi-lo+1)
	}
	switch r.IntN(6) {
	case 0:
		f.text, f.star = "*", true
		for v := lo; v <= hi; v++ {
			f.set[v] = true
		}
	case 1:
		step := 2 + r.IntN(min(10, hi-lo))
		f.text = "*/" + strconv.Itoa(step)
		for v := lo; v <= hi; v += step {
			f.set[v] = true
		}
	case 2:
		a := pick()
		b := a + r.IntN(hi-a+1)
		f.text = fmt.Sprintf("%d-%d", a, b)
		for v := a; v <= b; v++ {
			f.set[v] = true
		}
	case 3:
		a := pick()
		b := a + r.IntN(hi-a+1)
		step := 1
		if b > a {
			step += r.IntN(min(4, b-a)) // go-cron wants a step below the range's size
		}
		f.text = fmt.Sprintf("%d-%d/%d", a, b, step)
		for v := a; v <= b; v += step {
			f.set[v] = true
		}
	default:
		n := 1 + r.IntN(3)
		var vs []string
		for range n {
			v := pick()
			f.set[v] = true
			vs = append(vs, strconv.Itoa(v))
		}
		f.text = strings.Join(vs, ",")
	}
	return f
}

// twinExpr is a generated expression with the twin's view of it.
type twinExpr struct {
	text                                  string
	second, minute, hour, dom, month, dow field
	fixed                                 bool
}

func genExpr(r *rand.Rand, seconds bool) twinExpr {
	x := twinExpr{
		second: field{text: "0", set: map[int]bool{0: true}},
		minute: genField(r, 0, 59, []int{0, 15, 30, 45}),
		hour:   genField(r, 0, 23, []int{0, 1, 2, 3, 23}),
		dom:    field{text: "*", star: true, set: map[int]bool{}},
		month:  field{text: "*", star: true, set: map[int]bool{}},
		dow:    field{text: "*", star: true, set: map[int]bool{}},
	}
	if seconds {
		x.second = genField(r, 0, 59, []int{0, 30})
	}
	for v := 1; v <= 31; v++ {
		x.dom.set[v] = true
	}
	for v := 1; v <= 12; v++ {
		x.month.set[v] = true
	}
	for v := 0; v <= 6; v++ {
		x.dow.set[v] = true
	}
	if r.IntN(4) == 0 {
		x.dom = genField(r, 1, 31, nil)
	}
	if r.IntN(4) == 0 {
		x.dow = genField(r, 0, 6, nil)
	}
	if r.IntN(6) == 0 {
		x.month = genField(r, 1, 12, nil)
	}
	parts := []string{x.minute.text, x.hour.text, x.dom.text, x.month.text, x.dow.text}
	if seconds {
		parts = append([]string{x.second.text}, parts...)
	}
	x.text = strings.Join(parts, " ")
	x.fixed = !strings.HasPrefix(x.minute.text, "*") && !strings.HasPrefix(x.hour.text, "*")
	return x
}

// matches applies the fields to a wall-clock reading.
func (x twinExpr) matches(c time.Time) bool {
	dom, dow := x.dom.set[c.Day()], x.dow.set[int(c.Weekday())]
	day := dom && dow
	if !x.dom.star && !x.dow.star {
		day = dom || dow
	}
	return day && x.month.set[int(c.Month())] && x.hour.set[c.Hour()] &&
		x.minute.set[c.Minute()] && x.second.set[c.Second()]
}

// wall is t's wall-clock reading in loc, as a zone-free time.
func wall(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

// twinOccurrences steps real time by step over [warm, to] and returns the
// occurrences in (from, to]. A fixed-time expression fires at the first
// instant showing a matching wall time it has not shown before, and once
// at the first instant after a jump of the wall clock over a matching time.
// A wildcard expression fires at every instant showing a matching time.
func twinOccurrences(x twinExpr, loc *time.Location, warm, from, to time.Time, step time.Duration) []time.Time {
	var out []time.Time
	warm = warm.Truncate(step)
	seen := wall(warm.Add(-step), loc)
	prev := seen
	for t := warm; !t.After(to); t = t.Add(step) {
		c := wall(t, loc)
		fire := false
		if x.fixed {
			for skipped := prev.Add(step); skipped.Before(c); skipped = skipped.Add(step) {
				if skipped.After(seen) && x.matches(skipped) {
					fire = true
				}
			}
			if c.After(seen) && x.matches(c) {
				fire = true
			}
			if c.After(seen) {
				seen = c
			}
		} else {
			fire = x.matches(c)
		}
		prev = c
		if fire && t.After(from) {
			out = append(out, t)
		}
	}
	return out
}

// twinZones have daylight saving with gaps and repeats of 30 minutes, an
// hour, at midnight, and a whole skipped day.
var twinZones = []string{
	"America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Santiago",
	"Australia/Sydney", "Pacific/Chatham", "America/St_Johns", "Africa/Casablanca",
	"Pacific/Apia", "America/Havana", "Asia/Tehran", "UTC",
}

// transitions returns the instants in [from, to) at which loc's offset
// changes (or from itself if none).
func transitions(loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	for t := from; t.Before(to); {
		_, end := t.In(loc).ZoneBounds()
		if end.IsZero() || !end.Before(to) {
			break
		}
		out = append(out, end)
		t = end
	}
	if len(out) == 0 {
		out = append(out, from)
	}
	return out
}

func compareWithTwin(t *testing.T, r *rand.Rand, cases int, seconds bool, span, warm, step time.Duration) {
	t.Helper()
	for i := range cases {
		name := twinZones[i%len(twinZones)]
		loc := zone(t, name)
		year := 2009 + r.IntN(20)
		trs := transitions(loc, time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(year+1, 1, 1, 0, 0, 0, 0, time.UTC))
		center := trs[r.IntN(len(trs))]
		from := center.Add(-span/2 + time.Duration(r.IntN(3600))*time.Second)
		to := from.Add(span)
		x := genExpr(r, seconds)
		e, err := Parse(x.text)
		if err != nil {
			t.Fatalf("Parse(%q): %v", x.text, err)
		}
		if e.FixedTime() != x.fixed {
			t.Fatalf("%q: FixedTime() = %v, twin says %v", x.text, e.FixedTime(), x.fixed)
		}
		want := twinOccurrences(x, loc, from.Add(-warm), from, to, step)
		got := occurrences(e, loc, from, to)
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Fatalf("%q in %s over (%v, %v]:\n got %s\nwant %s", x.text, name, from.In(loc), to.In(loc), format(got), format(want))
		}
	}
}

// TestNextMatchesTwin compares Next with the minute-stepping twin on random
// five-field expressions over three-day windows around random daylight
// saving transitions (glossary, Recurring Schedule: opt-in IANA zone).
func TestNextMatchesTwin(t *testing.T) {
	t.Parallel()
	cases := 400
	if testing.Short() {
		cases = 60
	}
	compareWithTwin(t, rand.New(rand.NewPCG(7, 11)), cases, false, 3*24*time.Hour, 2*24*time.Hour, time.Minute)
}

// TestNextMatchesTwinSeconds is the same with a seconds field, stepping
// one second over six-hour windows.
func TestNextMatchesTwinSeconds(t *testing.T) {
	t.Parallel()
	cases := 60
	if testing.Short() {
		cases = 12
	}
	compareWithTwin(t, rand.New(rand.NewPCG(13, 17)), cases, true, 6*time.Hour, 3*time.Hour, time.Second)
}

// TestNextMatchesTwinYear runs a year of a fixed-time and a wildcard
// schedule in two zones against the twin: every occurrence instant of the
// year, both transitions included.
func TestNextMatchesTwinYear(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"America/New_York", "Australia/Lord_Howe"} {
		loc := zone(t, name)
		for _, spec := range []string{"30 1,2 * * *", "*/30 * * * *"} {
			x := twinExpr{text: spec, fixed: spec[0] != '*'}
			x.second = field{set: map[int]bool{0: true}}
			x.minute = field{set: map[int]bool{0: true, 30: true}}
			if x.fixed {
				x.minute = field{set: map[int]bool{30: true}}
			}
			x.hour = field{set: map[int]bool{}}
			for h := range 24 {
				x.hour.set[h] = !x.fixed || h == 1 || h == 2
			}
			x.dom, x.month, x.dow = field{star: true, set: map[int]bool{}}, field{star: true, set: map[int]bool{}}, field{star: true, set: map[int]bool{}}
			for v := 0; v <= 31; v++ {
				x.dom.set[v], x.month.set[v], x.dow.set[v] = true, true, true
			}
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			to := from.AddDate(1, 0, 0)
			want := twinOccurrences(x, loc, from.Add(-24*time.Hour), from, to, time.Minute)
			got := occurrences(MustParse(spec), loc, from, to)
			if !slices.EqualFunc(got, want, time.Time.Equal) {
				t.Errorf("%q in %s over 2026: %d occurrences, twin %d", spec, name, len(got), len(want))
			}
		}
	}
}
