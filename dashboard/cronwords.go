package dashboard

import (
	"fmt"
	"strconv"
	"strings"
)

// describeCron says a Recurring Schedule's cron expression in words, for
// the schedules page beside the expression itself. It reads the forms
// backwave.RecurringSchedule accepts: five fields, six with a leading
// seconds field, and the @ shorthands. What it cannot read it says so
// rather than guess; the expression is always shown too.
func describeCron(expr string) string {
	e := strings.TrimSpace(expr)
	switch strings.ToLower(e) {
	case "@yearly", "@annually":
		return "at 00:00 on 1 January"
	case "@monthly":
		return "at 00:00 on day 1 of every month"
	case "@weekly":
		return "at 00:00 every Sunday"
	case "@daily", "@midnight":
		return "at 00:00 every day"
	case "@hourly":
		return "at minute 0 of every hour"
	}
	if rest, ok := strings.CutPrefix(e, "@every "); ok {
		return "every " + strings.TrimSpace(rest)
	}
	f := strings.Fields(e)
	sec := "0"
	switch len(f) {
	case 5:
	case 6:
		sec, f = f[0], f[1:]
	default:
		return "(not a five- or six-field expression)"
	}
	minute, hour, dom, month, dow := f[0], f[1], f[2], f[3], f[4]
	var parts []string
	if sec != "0" {
		parts = append(parts, describeField(sec, "second", nil)+",")
	}
	parts = append(parts, describeTime(minute, hour))
	switch {
	case dom == "*" && dow == "*":
		parts = append(parts, "every day")
	case dom == "*" || dom == "?":
		parts = append(parts, "on "+describeField(dow, "", weekdays))
	case dow == "*" || dow == "?":
		parts = append(parts, "on "+describeField(dom, "day", nil)+" of the month")
	default:
		parts = append(parts, "on "+describeField(dom, "day", nil)+" of the month or on "+describeField(dow, "", weekdays))
	}
	if month != "*" {
		parts = append(parts, "in "+describeField(month, "", months))
	}
	return strings.Join(parts, " ")
}

var weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

var months = []string{"", "January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

func describeTime(minute, hour string) string {
	mNum, mOK := plainNumber(minute)
	hNum, hOK := plainNumber(hour)
	switch {
	case minute == "*" && hour == "*":
		return "every minute"
	case strings.HasPrefix(minute, "*/") && hour == "*":
		return "every " + strings.TrimPrefix(minute, "*/") + " minutes"
	case mOK && hour == "*":
		return fmt.Sprintf("at minute %d of every hour", mNum)
	case mOK && hOK:
		return fmt.Sprintf("at %02d:%02d", hNum, mNum)
	case mOK:
		return fmt.Sprintf("at minute %d of %s", mNum, describeField(hour, "hour", nil))
	case hour == "*":
		return describeField(minute, "minute", nil) + " of every hour"
	}
	return describeField(minute, "minute", nil) + " of " + describeField(hour, "hour", nil)
}

func plainNumber(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// describeField says one field: "every 5th minute", "minutes 0 and 30",
// "Monday to Friday". unit names the field ("minute"); names, when set,
// turn numbers into day or month names.
func describeField(field, unit string, names []string) string {
	name := func(v string) string {
		if n, ok := plainNumber(v); ok && names != nil && n < len(names) && names[n] != "" {
			return names[n]
		}
		return v // a number, or a name as written (MON, JAN)
	}
	if field == "*" {
		if unit == "" {
			return "every one"
		}
		return "every " + unit
	}
	items := strings.Split(field, ",")
	words := make([]string, 0, len(items))
	for _, it := range items {
		base, step, stepped := strings.Cut(it, "/")
		var w string
		switch {
		case base == "*" && stepped:
			w = "every " + ordinal(step) + " " + unitOr(unit, "one")
		case strings.Contains(base, "-"):
			a, b, _ := strings.Cut(base, "-")
			w = name(a) + " to " + name(b)
			if stepped {
				w = "every " + ordinal(step) + " " + unitOr(unit, "one") + " from " + w
			}
		default:
			w = name(base)
			if stepped {
				w = "every " + ordinal(step) + " " + unitOr(unit, "one") + " from " + w
			}
		}
		words = append(words, w)
	}
	prefix := ""
	if unit != "" && names == nil && !strings.HasPrefix(words[0], "every ") {
		prefix = unit + " "
		if len(words) > 1 {
			prefix = unit + "s "
		}
	}
	switch len(words) {
	case 1:
		return prefix + words[0]
	case 2:
		return prefix + words[0] + " and " + words[1]
	}
	return prefix + strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func unitOr(unit, def string) string {
	if unit == "" {
		return def
	}
	return unit
}

// ordinal renders a step: "2nd", "5th"; a step that is not a number as
// written.
func ordinal(s string) string {
	n, ok := plainNumber(s)
	if !ok {
		return s
	}
	if n == 1 {
		return "single" // "every single minute" reads oddly but never wrongly
	}
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
