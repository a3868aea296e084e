package cron

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	// Zone data, so the tests run the same on hosts without it.
	_ "time/tzdata"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load zone %s: %v", name, err)
	}
	return loc
}

// occurrences lists the occurrences in (from, to], in order.
func occurrences(e *Expr, loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	for t := e.Next(from, loc); !t.IsZero() && !t.After(to); t = e.Next(t, loc) {
		out = append(out, t)
	}
	return out
}

func format(ts []time.Time) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Format("2006-01-02 15:04:05 -0700")
	}
	return strings.Join(parts, ", ")
}

// TestDaylightSaving is the table of DEPENDENCIES.md ("Cron and daylight
// saving"), every row of which some proven library gets wrong, plus the
// same policy in more zones. Glossary, Recurring Schedule: "UTC by default,
// opt-in IANA zone". Policy (Vixie/ISC cron): a fixed-time job whose local
// time is skipped runs once right after the gap; a fixed-time job in a
// repeated hour runs once; wildcard-hour jobs follow real time.
func TestDaylightSaving(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, spec, zone string
		// from and to bound the occurrences listed, in local time of zone.
		from, to string
		want     []string
	}{
		{
			name: "spring-forward skipped fixed time runs once right after the gap",
			spec: "30 2 * * *", zone: "America/New_York",
			from: "2026-03-07 12:00", to: "2026-03-09 12:00",
			want: []string{"2026-03-08 03:00:00 -0400", "2026-03-09 02:30:00 -0400"},
		},
		{
			name: "fall-back repeated fixed time runs once, at its first instant",
			spec: "30 1 * * *", zone: "America/New_York",
			from: "2026-10-31 12:00", to: "2026-11-02 12:00",
			want: []string{"2026-11-01 01:30:00 -0400", "2026-11-02 01:30:00 -0500"},
		},
		{
			name: "wildcard hour follows real time across fall-back",
			spec: "0 * * * *", zone: "America/New_York",
			from: "2026-11-01 00:30", to: "2026-11-01 02:30",
			want: []string{"2026-11-01 01:00:00 -0400", "2026-11-01 01:00:00 -0500", "2026-11-01 02:00:00 -0500"},
		},
		{
			name: "wildcard hour follows real time across spring-forward",
			spec: "0 * * * *", zone: "America/New_York",
			from: "2026-03-08 00:30", to: "2026-03-08 03:30",
			want: []string{"2026-03-08 01:00:00 -0500", "2026-03-08 03:00:00 -0400"},
		},
		{
			name: "midnight gap: the day starts at 01:00",
			spec: "0 0 * * *", zone: "America/Santiago",
			from: "2026-09-05 12:00", to: "2026-09-07 12:00",
			want: []string{"2026-09-06 01:00:00 -0300", "2026-09-07 00:00:00 -0300"},
		},
		{
			name: "midnight repeated on fall-back runs once",
			spec: "30 23 * * *", zone: "America/Santiago",
			from: "2026-04-04 12:00", to: "2026-04-05 12:00",
			want: []string{"2026-04-04 23:30:00 -0300"},
		},
		{
			name: "30-minute gap",
			spec: "15 2 * * *", zone: "Australia/Lord_Howe",
			from: "2026-10-03 12:00", to: "2026-10-05 12:00",
			want: []string{"2026-10-04 02:30:00 +1100", "2026-10-05 02:15:00 +1100"},
		},
		{
			name: "30-minute repeat, fixed time runs once",
			spec: "45 1 * * *", zone: "Australia/Lord_Howe",
			from: "2026-04-04 12:00", to: "2026-04-05 12:00",
			want: []string{"2026-04-05 01:45:00 +1100"},
		},
		{
			name: "30-minute repeat, wildcard runs twice",
			spec: "*/30 1 * * *", zone: "Australia/Lord_Howe",
			from: "2026-04-04 12:00", to: "2026-04-05 12:00",
			want: []string{"2026-04-05 01:00:00 +1100", "2026-04-05 01:30:00 +1100", "2026-04-05 01:30:00 +1030"},
		},
		{
			name: "London skipped hour",
			spec: "0 1 * * *", zone: "Europe/London",
			from: "2026-03-28 12:00", to: "2026-03-30 12:00",
			want: []string{"2026-03-29 02:00:00 +0100", "2026-03-30 01:00:00 +0100"},
		},
		{
			name: "London repeated hour",
			spec: "0 1 * * *", zone: "Europe/London",
			from: "2026-10-24 12:00", to: "2026-10-26 12:00",
			want: []string{"2026-10-25 01:00:00 +0100", "2026-10-26 01:00:00 +0000"},
		},
		{
			name: "several fixed times in one gap fire once",
			spec: "0,20,40 2 * * *", zone: "America/New_York",
			from: "2026-03-08 00:00", to: "2026-03-08 12:00",
			want: []string{"2026-03-08 03:00:00 -0400"},
		},
		{
			name: "a skipped whole day (Samoa, 2011-12-30) fires once after it",
			spec: "0 12 * * *", zone: "Pacific/Apia",
			from: "2011-12-29 00:00", to: "2011-12-31 23:00",
			want: []string{"2011-12-29 12:00:00 -1000", "2011-12-31 00:00:00 +1400", "2011-12-31 12:00:00 +1400"},
		},
		{
			name: "seconds field",
			spec: "*/20 * * * * *", zone: "UTC",
			from: "2026-01-01 00:00", to: "2026-01-01 00:01",
			want: []string{"2026-01-01 00:00:20 +0000", "2026-01-01 00:00:40 +0000", "2026-01-01 00:01:00 +0000"},
		},
		{
			name: "day of month OR day of week when both are restricted",
			spec: "0 0 13 * 5", zone: "UTC",
			from: "2026-02-01 00:00", to: "2026-02-28 00:00",
			// Fridays 6, 13, 20, 27 and the 13th (a Friday too).
			want: []string{"2026-02-06 00:00:00 +0000", "2026-02-13 00:00:00 +0000", "2026-02-20 00:00:00 +0000", "2026-02-27 00:00:00 +0000"},
		},
		{
			name: "@every follows real time from the Unix epoch",
			spec: "@every 90m", zone: "America/New_York",
			from: "2026-03-08 00:00", to: "2026-03-08 05:00",
			// 1772949600 = 328324 × 5400 is 01:00 EST; then every 90
			// real minutes, across the skipped hour.
			want: []string{"2026-03-08 01:00:00 -0500", "2026-03-08 03:30:00 -0400", "2026-03-08 05:00:00 -0400"},
		},
		{
			name: "@hourly is a wildcard",
			spec: "@hourly", zone: "America/New_York",
			from: "2026-11-01 00:30", to: "2026-11-01 02:30",
			want: []string{"2026-11-01 01:00:00 -0400", "2026-11-01 01:00:00 -0500", "2026-11-01 02:00:00 -0500"},
		},
		{
			name: "@daily is fixed time",
			spec: "@daily", zone: "America/Santiago",
			from: "2026-09-05 12:00", to: "2026-09-06 12:00",
			want: []string{"2026-09-06 01:00:00 -0300"},
		},
		{
			// Beyond its listed transitions a zone follows its TZ rule,
			// where Go mistakes the end of a leap year's last period.
			name: "a leap year under a zone's TZ rule (golang/go#81583)",
			spec: "0 12 * * *", zone: "Europe/Warsaw",
			from: "2040-12-30 00:00", to: "2041-01-02 00:00",
			want: []string{"2040-12-30 12:00:00 +0100", "2040-12-31 12:00:00 +0100", "2041-01-01 12:00:00 +0100"},
		},
		{
			name: "@yearly after a leap year under a southern zone's TZ rule",
			spec: "@yearly", zone: "America/Santiago",
			from: "2040-06-01 00:00", to: "2042-06-01 00:00",
			want: []string{"2041-01-01 00:00:00 -0300", "2042-01-01 00:00:00 -0300"},
		},
		{
			name: "wildcard across a leap year's end under a zone's TZ rule",
			spec: "0 * * * *", zone: "Europe/Warsaw",
			from: "2040-12-31 22:30", to: "2041-01-01 02:00",
			want: []string{"2040-12-31 23:00:00 +0100", "2041-01-01 00:00:00 +0100", "2041-01-01 01:00:00 +0100", "2041-01-01 02:00:00 +0100"},
		},
		{
			name: "never: February 30",
			spec: "0 0 30 2 *", zone: "UTC",
			from: "2026-01-01 00:00", to: "2046-01-01 00:00",
			want: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			loc := zone(t, tc.zone)
			e, err := Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			from, err := time.ParseInLocation("2006-01-02 15:04", tc.from, loc)
			if err != nil {
				t.Fatal(err)
			}
			to, err := time.ParseInLocation("2006-01-02 15:04", tc.to, loc)
			if err != nil {
				t.Fatal(err)
			}
			got := format(occurrences(e, loc, from, to))
			if want := strings.Join(tc.want, ", "); got != want {
				t.Errorf("%q in %s, (%s, %s]:\n got %s\nwant %s", tc.spec, tc.zone, tc.from, tc.to, got, want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{
		"", "   ", "TZ=UTC 0 * * * *", "CRON_TZ=Europe/London 0 * * * *",
		"61 * * * *", "* 24 * * *", "* * 32 * *", "* * * 13 *", "* * * * 8",
		"* * * *", "* * * * * * *", "@every 500ms", "@every 1500ms", "@every -1s", "@fortnightly",
		"0 0 L * *", "0 0 * * FRI#3", "H * * * *", "a b c d e",
		strings.Repeat("1,", 200) + "1 * * * *",
	} {
		if _, err := Parse(spec); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want an error wrapping ErrInvalid", spec, err)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec  string
		fixed bool
		every time.Duration
	}{
		{"0 3 * * *", true, 0},
		{"*/5 * * * *", false, 0},
		{"0 * * * *", false, 0},
		{"15 2-4 * * MON-FRI", true, 0},
		{"0 0 3 * * *", true, 0},
		{"* 0 3 * * *", true, 0},
		{"0 * 3 * * *", false, 0},
		{"  0 0 1 JAN *  ", true, 0},
		{"@yearly", true, 0}, {"@annually", true, 0}, {"@monthly", true, 0}, {"@weekly", true, 0},
		{"@daily", true, 0}, {"@midnight", true, 0}, {"@hourly", false, 0},
		{"@every 1h30m", false, 90 * time.Minute},
	} {
		e, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if e.FixedTime() != tc.fixed || e.Every() != tc.every {
			t.Errorf("Parse(%q): fixed=%v every=%v, want %v %v", tc.spec, e.FixedTime(), e.Every(), tc.fixed, tc.every)
		}
		if e.String() != strings.TrimSpace(tc.spec) {
			t.Errorf("Parse(%q).String() = %q", tc.spec, e.String())
		}
	}
}

// TestNextIsStrictlyAfter checks Next's contract on sub-second and exact
// inputs, and that it returns times in the requested zone.
func TestNextIsStrictlyAfter(t *testing.T) {
	t.Parallel()
	loc := zone(t, "Europe/London")
	e := MustParse("0 * * * * *")
	at := time.Date(2026, 6, 1, 10, 0, 0, 0, loc)
	for _, after := range []time.Time{at.Add(-time.Nanosecond), at.Add(-time.Second)} {
		if got := e.Next(after, loc); !got.Equal(at) {
			t.Errorf("Next(%v) = %v, want %v", after, got, at)
		}
	}
	for _, after := range []time.Time{at, at.Add(500 * time.Millisecond)} {
		if got := e.Next(after, loc); !got.Equal(at.Add(time.Minute)) {
			t.Errorf("Next(%v) = %v, want %v", after, got, at.Add(time.Minute))
		}
	}
	if got := e.Next(at, loc); got.Location() != loc {
		t.Errorf("Next returned a time in %v, want %v", got.Location(), loc)
	}
	if got := e.Next(at, nil); got.Location() != time.UTC {
		t.Errorf("Next with a nil zone returned a time in %v, want UTC", got.Location())
	}
	every := MustParse("@every 10s")
	if got, want := every.Next(time.Unix(-15, 0), nil), time.Unix(-10, 0); !got.Equal(want) {
		t.Errorf("@every 10s before the epoch: Next = %v, want %v", got.Unix(), want.Unix())
	}
}

// TestHostZoneIrrelevant runs the daylight saving table and a twin sample
// in a child process whose local zone is Pacific/Chatham (+12:45/+13:45):
// occurrences depend on the zone passed to Next, never on the host's. It
// guards the one thing this package takes on trust from go-cron: that a
// schedule without a zone prefix computes Next in the zone of the time it
// is given (here UTC), not in time.Local.
func TestHostZoneIrrelevant(t *testing.T) {
	t.Parallel()
	if os.Getenv("BACKWAVE_CRON_CHILD") != "" {
		t.Skip("already the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostZoneChild$", "-test.v")
	cmd.Env = append(os.Environ(), "TZ=Pacific/Chatham", "BACKWAVE_CRON_CHILD=1")
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("with TZ=Pacific/Chatham: %v\n%s", err, out)
	case strings.Contains(string(out), "--- SKIP"):
		t.Skipf("the host cannot set the local zone:\n%s", out)
	case !strings.Contains(string(out), "--- PASS: TestHostZoneChild"):
		t.Fatalf("the child did not run:\n%s", out)
	}
}

// TestHostZoneChild is TestHostZoneIrrelevant's child.
func TestHostZoneChild(t *testing.T) {
	if os.Getenv("BACKWAVE_CRON_CHILD") == "" {
		t.Skip("run by TestHostZoneIrrelevant")
	}
	if _, off := time.Date(2026, 1, 1, 0, 0, 0, 0, time.Local).Zone(); off != 13*3600+45*60 {
		t.Skipf("TZ=Pacific/Chatham not applied: local offset %d", off)
	}
	t.Run("table", TestDaylightSaving)
	t.Run("twin", func(t *testing.T) {
		compareWithTwin(t, rand.New(rand.NewPCG(19, 23)), 40, false, 3*24*time.Hour, 2*24*time.Hour, time.Minute)
	})
}
