package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	// Zone data, so the tests run the same on hosts without it.
	_ "time/tzdata"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

func TestMaintenanceConfig(t *testing.T) {
	t.Parallel()
	base := Config{Worker: "w", Policy: Strict("a"), MaintenanceInterval: 10 * time.Second}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"retention defaults its batch", func(c *Config) { c.Retention = &RetentionPolicy{KeepSucceeded: time.Hour} }, ""},
		{"negative keep", func(c *Config) { c.Retention = &RetentionPolicy{KeepSucceeded: -time.Hour} }, "KeepSucceeded"},
		{"negative dead-lettered keep", func(c *Config) { c.Retention = &RetentionPolicy{KeepDeadLettered: -time.Hour} }, "KeepDeadLettered"},
		{"negative batch", func(c *Config) { c.Retention = &RetentionPolicy{Batch: -1} }, "Batch"},
		{"missed-after within a beat", func(c *Config) { c.MissedAfter = 10 * time.Second }, "MissedAfter"},
		{"negative lookahead", func(c *Config) { c.MintLookahead = -time.Second }, "MintLookahead"},
	} {
		cfg := base
		tc.edit(&cfg)
		d, err := New(cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want ErrInvalidConfig naming %s", tc.name, err, tc.want)
		case tc.want == "":
			got := d.Config()
			if got.MissedAfter != time.Minute || got.MintLookahead != 10*time.Second {
				t.Errorf("%s: MissedAfter %v, MintLookahead %v; want 1m, 10s", tc.name, got.MissedAfter, got.MintLookahead)
			}
			if got.Retention != nil && got.Retention.Batch != DefaultPurgeBatch {
				t.Errorf("%s: retention batch %d, want %d", tc.name, got.Retention.Batch, DefaultPurgeBatch)
			}
		}
	}
}

// world is a deterministic, single-threaded pump for one Driver against the
// In-Memory Store on Virtual Time: every command is carried out at once and
// every handler succeeds as soon as it starts.
type world struct {
	t       *testing.T
	clock   *vtime.Manual
	st      *memstore.Store
	d       *Driver
	minted  map[string][]time.Time
	zones   map[string]*time.Location
	ran     int
	purged  int
	pending []Event
}

func (w *world) step(ev Event) {
	w.pending = append(w.pending, ev)
	for len(w.pending) > 0 {
		ev := w.pending[0]
		w.pending = w.pending[1:]
		for _, c := range w.d.Step(ev, nil) {
			if res := w.do(c); res != nil {
				w.pending = append(w.pending, res)
			}
		}
	}
}

func (w *world) do(c Command) Event {
	switch c := c.(type) {
	case StoreCommand:
		r := w.caller().Call(context.Background(), c)
		if r.Err != nil {
			w.t.Fatalf("%s: %v", c, r.Err)
		}
		switch c.(type) {
		case Mint:
			for _, res := range r.Minted {
				if !res.Applied {
					w.t.Fatalf("a plan of the only node is stale: %+v", res)
				}
				for _, j := range res.Jobs {
					w.minted[res.Schedule] = append(w.minted[res.Schedule], j.At)
				}
			}
		case Purge:
			w.purged += r.Purged.Purged
		}
		return r.Event(w.clock.Now())
	case Execute:
		w.ran++
		return JobDone{Now: w.clock.Now(), Lease: c.Job.Lease(), Result: core.ResultSucceeded}
	case Forget:
		return nil
	default:
		w.t.Fatalf("unexpected command %s", c)
	}
	return nil
}

// caller is the world's Caller, loading zones with the host's zone data.
func (w *world) caller() *Caller {
	return &Caller{Worker: w.d.Config().Worker, Store: w.st, Schedules: w.st, Retention: w.st, Zone: func(name string) (*time.Location, error) {
		loc, ok := w.zones[name]
		if !ok {
			var err error
			if loc, err = time.LoadLocation(name); err != nil {
				w.t.Fatalf("load zone %q: %v", name, err)
			}
			w.zones[name] = loc
		}
		return loc, nil
	}}
}

// twin lists a five-field expression's occurrences in (from, to] by
// stepping real time a minute at a time and reading the wall clock in loc —
// the Vixie cron policy as plainly as it can be said: a fixed-time job
// fires at the first instant showing a matching wall time not shown
// before, and once at the first instant after a jump of the wall clock
// over a matching time; a wildcard job fires at every instant showing a
// matching time.
func twin(match func(h, m int) bool, fixed bool, loc *time.Location, from, to time.Time) []time.Time {
	wall := func(t time.Time) time.Time {
		l := t.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
	}
	var out []time.Time
	start := from.Add(-48 * time.Hour).Truncate(time.Minute)
	seen := wall(start.Add(-time.Minute))
	prev := seen
	for t := start; !t.After(to); t = t.Add(time.Minute) {
		c := wall(t)
		fire := false
		if fixed {
			for s := prev.Add(time.Minute); s.Before(c); s = s.Add(time.Minute) {
				fire = fire || (s.After(seen) && match(s.Hour(), s.Minute()))
			}
			fire = fire || (c.After(seen) && match(c.Hour(), c.Minute()))
			if c.After(seen) {
				seen = c
			}
		} else {
			fire = match(c.Hour(), c.Minute())
		}
		prev = c
		if fire && t.After(from) {
			out = append(out, t)
		}
	}
	return out
}

// TestYearOfSchedules runs a year of Recurring Schedules in zones with
// daylight saving through the Driver, the Core's mint planner and the
// In-Memory Store on Virtual Time, with retention purging as it goes, and
// checks every minted occurrence instant against the minute-stepping twin
// (issue 7, acceptance: "a year of an @every/cron schedule in a zone with
// DST on Virtual Time ... against an independent computation").
func TestYearOfSchedules(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := vtime.NewManual(start)
	st := memstore.New(memstore.Options{Clock: clock})
	ny, _ := time.LoadLocation("America/New_York")
	lh, _ := time.LoadLocation("Australia/Lord_Howe")
	type sched struct {
		def   store.ScheduleDef
		loc   *time.Location
		match func(h, m int) bool
		fixed bool
	}
	scheds := []sched{
		{store.ScheduleDef{Name: "ny-fixed", Spec: "30 1,2 * * *", Zone: "America/New_York"}, ny,
			func(h, m int) bool { return (h == 1 || h == 2) && m == 30 }, true},
		{store.ScheduleDef{Name: "ny-wild", Spec: "*/30 * * * *", Zone: "America/New_York"}, ny,
			func(h, m int) bool { return m%30 == 0 }, false},
		{store.ScheduleDef{Name: "lh-fixed", Spec: "15 2 * * *", Zone: "Australia/Lord_Howe"}, lh,
			func(h, m int) bool { return h == 2 && m == 15 }, true},
		{store.ScheduleDef{Name: "every", Spec: "@every 7h"}, time.UTC, nil, false},
	}
	for _, s := range scheds {
		s.def.Template = store.JobTemplate{WireName: "tick", Queue: "cron", MaxAttempts: 1}
		if _, err := st.ScheduleUpsert(context.Background(), store.ScheduleUpsertParams{Schedule: s.def}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := New(Config{
		Worker: "w", Policy: Strict("cron"), PoolSize: 8, MaintenanceInterval: 5 * time.Minute,
		Schedules: true, Retention: &RetentionPolicy{KeepSucceeded: time.Hour, KeepDeadLettered: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, clock: clock, st: st, d: d, minted: map[string][]time.Time{}, zones: map[string]*time.Location{}}
	end := start.AddDate(1, 0, 0)
	for clock.Now().Before(end) {
		w.step(Poll{Now: clock.Now()})
		clock.Advance(time.Minute)
	}
	w.step(Poll{Now: clock.Now()})
	horizon := clock.Now()
	total := 0
	for _, s := range scheds {
		got := w.minted[s.def.Name]
		var want []time.Time
		if s.match == nil {
			// Whole multiples of 7h since the Unix epoch.
			for at := time.Unix((start.Unix()/25200+1)*25200, 0); !at.After(horizon.Add(d.Config().MintLookahead)); at = at.Add(7 * time.Hour) {
				want = append(want, at)
			}
		} else {
			want = twin(s.match, s.fixed, s.loc, start, horizon.Add(d.Config().MintLookahead))
		}
		// Minted ahead within the lookahead at the last beat, or not yet.
		for len(want) > len(got) && want[len(want)-1].After(horizon) {
			want = want[:len(want)-1]
		}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s (%q in %s): minted %d occurrences, the twin %d; first difference: %s",
				s.def.Name, s.def.Spec, s.loc, len(got), len(want), firstDiff(got, want))
		}
		total += len(got)
	}
	if w.ran < total-8 || w.ran > total {
		t.Errorf("%d jobs ran, %d minted", w.ran, total)
	}
	if w.purged < w.ran-200 {
		t.Errorf("retention purged %d of %d finished jobs", w.purged, w.ran)
	}
	// The twin itself sees the daylight saving days: once after the gap,
	// once in the repeated hour.
	nyFixed := w.minted["ny-fixed"]
	for _, want := range []string{"2026-03-08T03:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T02:30:00-05:00"} {
		at, _ := time.Parse(time.RFC3339, want)
		if !slices.ContainsFunc(nyFixed, at.Equal) {
			t.Errorf("ny-fixed did not fire at %s", want)
		}
	}
	t.Logf("a year: %d occurrences minted, %d jobs ran, %d purged", total, w.ran, w.purged)
}

func firstDiff(got, want []time.Time) string {
	for i := range min(len(got), len(want)) {
		if !got[i].Equal(want[i]) {
			return fmt.Sprintf("#%d minted %v, twin %v", i, got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("extra %v", got[len(want)])
	}
	if len(want) > len(got) {
		return fmt.Sprintf("missing %v", want[len(got)])
	}
	return "none"
}
