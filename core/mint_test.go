package core

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// every fires at whole multiples of itself since the Unix epoch.
type every time.Duration

func (e every) Next(after time.Time) time.Time {
	d := time.Duration(e)
	return after.Truncate(d).Add(d)
}

var t0 = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

func at(hms string) time.Time {
	d, err := time.ParseDuration(hms)
	if err != nil {
		panic(err)
	}
	return t0.Add(d)
}

func (p MintPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cursor=%s", p.Cursor.Sub(t0))
	for _, m := range p.Mints {
		if m.MakeUp {
			fmt.Fprintf(&b, " makeup@%s", m.At.Sub(t0))
		} else {
			fmt.Fprintf(&b, " mint@%s", m.At.Sub(t0))
		}
	}
	for _, s := range p.Skips {
		if s.First.Equal(s.At) {
			fmt.Fprintf(&b, " %s@%s", s.Reason, s.At.Sub(t0))
		} else {
			fmt.Fprintf(&b, " %s@%s..%s", s.Reason, s.First.Sub(t0), s.At.Sub(t0))
		}
	}
	return b.String()
}

// TestPlanMint checks the mint planner against the glossary's Recurring
// Schedule, Catch-Up Policy ("Skip (default — missed means missed) or
// Coalesce (mint exactly one make-up job). Replaying every missed
// occurrence is deliberately unsupported.") and No-Overlap ("don't mint a
// new instance while a previous one is non-terminal. A skipped tick is
// recorded visibly").
func TestPlanMint(t *testing.T) {
	t.Parallel()
	set := MintSettings{Lookahead: 5 * time.Second, MissedAfter: time.Minute, MaxOccurrences: 100}
	hourly := every(time.Hour)
	for _, tc := range []struct {
		name  string
		s     ScheduleState
		occ   Occurrences
		now   string
		want  string // "" means no plan
		set   *MintSettings
		extra func(t *testing.T, p MintPlan)
	}{
		{name: "paused mints nothing", s: ScheduleState{Cursor: at("11h"), Paused: true}, occ: hourly, now: "12h0m3s"},
		{name: "nothing due", s: ScheduleState{Cursor: at("11h")}, occ: hourly, now: "11h30m"},
		{name: "on time", s: ScheduleState{Cursor: at("11h")}, occ: hourly, now: "12h0m3s", want: "cursor=12h0m0s mint@12h0m0s"},
		{name: "late but within MissedAfter is on time", s: ScheduleState{Cursor: at("11h")}, occ: hourly, now: "12h0m59s", want: "cursor=12h0m0s mint@12h0m0s"},
		{name: "ahead of time within Lookahead", s: ScheduleState{Cursor: at("11h")}, occ: hourly, now: "11h59m57s", want: "cursor=12h0m0s mint@12h0m0s"},
		{name: "No-Overlap never mints ahead", s: ScheduleState{Cursor: at("11h"), NoOverlap: true}, occ: hourly, now: "11h59m57s"},
		{name: "outage, Skip: the missed span is one record", s: ScheduleState{Cursor: at("8h")}, occ: hourly, now: "12h30m", want: "cursor=12h0m0s missed@9h0m0s..12h0m0s"},
		{name: "outage, Skip, then on time", s: ScheduleState{Cursor: at("8h")}, occ: hourly, now: "12h0m30s", want: "cursor=12h0m0s mint@12h0m0s missed@9h0m0s..11h0m0s"},
		{name: "outage, Coalesce: exactly one make-up job", s: ScheduleState{Cursor: at("8h"), CatchUp: CatchUpCoalesce}, occ: hourly, now: "12h30m", want: "cursor=12h0m0s makeup@12h0m0s"},
		{name: "outage, Coalesce, then on time", s: ScheduleState{Cursor: at("8h"), CatchUp: CatchUpCoalesce}, occ: hourly, now: "12h0m30s", want: "cursor=12h0m0s makeup@11h0m0s mint@12h0m0s"},
		{name: "one missed occurrence, Coalesce", s: ScheduleState{Cursor: at("11h"), CatchUp: CatchUpCoalesce}, occ: hourly, now: "12h5m", want: "cursor=12h0m0s makeup@12h0m0s"},
		{name: "No-Overlap with a live instance records the skip", s: ScheduleState{Cursor: at("11h"), NoOverlap: true, InstanceLive: true}, occ: hourly, now: "12h0m3s", want: "cursor=12h0m0s overlap@12h0m0s"},
		{name: "No-Overlap without a live instance mints", s: ScheduleState{Cursor: at("11h"), NoOverlap: true}, occ: hourly, now: "12h0m3s", want: "cursor=12h0m0s mint@12h0m0s"},
		{name: "No-Overlap: the plan's own job is live for later occurrences", s: ScheduleState{Cursor: at("12h"), NoOverlap: true}, occ: every(10 * time.Second), now: "12h0m25s", want: "cursor=12h0m20s mint@12h0m10s overlap@12h0m20s"},
		{name: "No-Overlap, Coalesce, live: the make-up is skipped too", s: ScheduleState{Cursor: at("8h"), CatchUp: CatchUpCoalesce, NoOverlap: true, InstanceLive: true}, occ: hourly, now: "12h0m30s", want: "cursor=12h0m0s overlap@9h0m0s..11h0m0s overlap@12h0m0s"},
		{name: "No-Overlap, Coalesce, idle: make-up, then the on-time one overlaps it", s: ScheduleState{Cursor: at("8h"), CatchUp: CatchUpCoalesce, NoOverlap: true}, occ: hourly, now: "12h0m30s", want: "cursor=12h0m0s makeup@11h0m0s overlap@12h0m0s"},
		{name: "a zero cursor starts now", s: ScheduleState{}, occ: hourly, now: "12h0m3s"},
		{name: "a bound on occurrences per plan", s: ScheduleState{Cursor: at("12h")}, occ: every(time.Second), now: "12h0m30s",
			set: &MintSettings{MissedAfter: time.Minute, MaxOccurrences: 3}, want: "cursor=12h0m3s mint@12h0m1s mint@12h0m2s mint@12h0m3s"},
		{name: "a year of a one-second schedule missed is one record", s: ScheduleState{Cursor: at("1h")}, occ: every(time.Second), now: "8761h",
			set:  &MintSettings{MissedAfter: time.Minute, MaxOccurrences: 1},
			want: "cursor=8760h59m0s mint@8760h59m0s missed@1h0m1s..8760h58m59s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := set
			if tc.set != nil {
				s = *tc.set
			}
			tc.s.Name, tc.s.Revision = "s", 7
			p, ok := PlanMint(tc.s, tc.occ, at(tc.now), s)
			got := ""
			if ok {
				got = p.String()
				if p.Schedule != "s" || p.Revision != 7 {
					t.Errorf("plan names %q revision %d, want the schedule's", p.Schedule, p.Revision)
				}
			}
			if got != tc.want {
				t.Errorf("plan = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPlanMintOverTime replays random maintenance beats with outages over a
// day of a schedule and checks what the glossary promises: no occurrence is
// dealt with twice, every occurrence is dealt with once (minted, made up,
// or covered by a skip record), an on-time beat mints every occurrence, and
// each plan holds at most one make-up job.
func TestPlanMintOverTime(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 5))
	for run := range 300 {
		step := time.Duration(1+r.IntN(20)) * time.Minute
		occ := every(step)
		st := ScheduleState{Name: "s", Cursor: t0, CatchUp: CatchUpPolicy(r.IntN(2)), NoOverlap: r.IntN(3) == 0}
		set := MintSettings{Lookahead: time.Duration(r.IntN(10)) * time.Second, MissedAfter: time.Duration(1+r.IntN(5)) * time.Minute, MaxOccurrences: 1000}
		dealt := map[time.Time]string{}
		now := t0
		end := t0.Add(24 * time.Hour)
		for now.Before(end) {
			if r.IntN(50) == 0 {
				now = now.Add(time.Duration(r.IntN(300)) * time.Minute) // an outage
			} else {
				now = now.Add(time.Duration(1+r.IntN(10)) * time.Second)
			}
			st.InstanceLive = st.NoOverlap && r.IntN(3) == 0
			p, ok := PlanMint(st, occ, now, set)
			if !ok {
				continue
			}
			makeUps := 0
			for _, m := range p.Mints {
				if m.MakeUp {
					makeUps++
				}
				if prev, dup := dealt[m.At]; dup {
					t.Fatalf("run %d: occurrence %v minted after being %s", run, m.At, prev)
				}
				dealt[m.At] = "minted"
			}
			if makeUps > 1 {
				t.Fatalf("run %d: a plan with %d make-up jobs", run, makeUps)
			}
			for _, s := range p.Skips {
				for o := s.First; !o.After(s.At); o = occ.Next(o) {
					if prev, dup := dealt[o]; dup {
						t.Fatalf("run %d: occurrence %v skipped after being %s", run, o, prev)
					}
					dealt[o] = "skipped"
				}
			}
			// A make-up job covers the missed span before it.
			for _, m := range p.Mints {
				if m.MakeUp {
					for o := occ.Next(st.Cursor); o.Before(m.At); o = occ.Next(o) {
						dealt[o] = "made up"
					}
				}
			}
			if !p.Cursor.After(st.Cursor) {
				t.Fatalf("run %d: the plan does not move the cursor (%v → %v)", run, st.Cursor, p.Cursor)
			}
			st.Cursor = p.Cursor
		}
		for o := occ.Next(t0); !o.After(st.Cursor); o = occ.Next(o) {
			if _, ok := dealt[o]; !ok {
				t.Fatalf("run %d: occurrence %v up to the cursor was never dealt with", run, o)
			}
		}
	}
}

func TestCatchUpPolicyNames(t *testing.T) {
	t.Parallel()
	for _, p := range []CatchUpPolicy{CatchUpSkip, CatchUpCoalesce} {
		if got, err := ParseCatchUpPolicy(p.String()); err != nil || got != p {
			t.Errorf("ParseCatchUpPolicy(%q) = %v, %v", p, got, err)
		}
	}
	for _, r := range []SkipReason{SkipOverlap, SkipMissed} {
		if got, err := ParseSkipReason(r.String()); err != nil || got != r {
			t.Errorf("ParseSkipReason(%q) = %v, %v", r, got, err)
		}
	}
	if _, err := ParseCatchUpPolicy("replay"); err == nil {
		t.Error("ParseCatchUpPolicy accepted replay: replaying every missed occurrence is deliberately unsupported")
	}
}
