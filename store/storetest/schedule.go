package storetest

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/core/cron"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// hourlyDef is a valid schedule definition minting an hourly job in "q".
func hourlyDef(name string) store.ScheduleDef {
	return store.ScheduleDef{
		Name: name,
		Spec: "0 * * * *",
		Template: store.JobTemplate{
			WireName: "storetest.scheduled", Queue: "q", Payload: []byte(`{"n":1}`),
			MaxAttempts: 3, Tags: []job.Tag{job.Label("nightly"), job.Keyed("team", "ops")},
		},
	}
}

func (e *env) upsert(d store.ScheduleDef) store.ScheduleUpsertResult {
	e.t.Helper()
	res, err := e.s.ScheduleUpsert(e.ctx, store.ScheduleUpsertParams{Schedule: d})
	if err != nil {
		e.t.Fatalf("ScheduleUpsert(%s): %v", d.Name, err)
	}
	return res
}

// schedule returns the named schedule from ScheduleList and the store's
// now the list read.
func (e *env) schedule(name string) (store.Schedule, time.Time) {
	e.t.Helper()
	res, err := e.s.ScheduleList(e.ctx)
	if err != nil {
		e.t.Fatalf("ScheduleList: %v", err)
	}
	for _, s := range res.Schedules {
		if s.Name == name {
			return s, res.Now
		}
	}
	e.t.Fatalf("ScheduleList does not list %q", name)
	return store.Schedule{}, time.Time{}
}

// plan loads the schedule and plans its mint at the store's now with the
// Core's planner (UTC), failing if there is nothing to mint.
func (e *env) plan(name string) core.MintPlan {
	e.t.Helper()
	sc, now := e.schedule(name)
	expr, err := cron.Parse(sc.Spec)
	if err != nil {
		e.t.Fatalf("stored Spec %q does not parse: %v", sc.Spec, err)
	}
	p, ok := core.PlanMint(sc.State(), utc{expr}, now, core.MintSettings{MissedAfter: time.Minute, MaxOccurrences: 100})
	if !ok {
		e.t.Fatalf("schedule %q has nothing to mint at %v (cursor %v)", name, now, sc.Cursor)
	}
	return p
}

// utc reads an expression in UTC.
type utc struct{ e *cron.Expr }

func (u utc) Next(after time.Time) time.Time { return u.e.Next(after, time.UTC) }

func (e *env) mint(plans ...core.MintPlan) []store.MintResult {
	e.t.Helper()
	res, err := e.s.ScheduleMint(e.ctx, store.MintParams{Plans: plans})
	if err != nil {
		e.t.Fatalf("ScheduleMint: %v", err)
	}
	if len(res) != len(plans) {
		e.t.Fatalf("ScheduleMint answered %d of %d plans", len(res), len(plans))
	}
	for i, r := range res {
		if r.Schedule != plans[i].Schedule {
			e.t.Fatalf("ScheduleMint result %d is for %q, want %q (input order)", i, r.Schedule, plans[i].Schedule)
		}
	}
	return res
}

func (e *env) occurrences(name string, kinds ...store.OccurrenceKind) []store.Occurrence {
	e.t.Helper()
	occ, err := e.s.ScheduleOccurrences(e.ctx, store.OccurrenceListParams{Schedule: name, Kinds: kinds, Limit: 1000})
	if err != nil {
		e.t.Fatalf("ScheduleOccurrences(%s): %v", name, err)
	}
	return occ
}

// toNextHour moves the store's clock to 30 seconds past the next hour.
func (e *env) toNextHour() time.Time {
	e.t.Helper()
	now := e.now()
	next := now.Truncate(time.Hour).Add(time.Hour)
	e.advance(next.Sub(now) + 30*time.Second)
	return next
}

func testSchedule(t *testing.T, s *suite) {
	// ScheduleUpsert: "A new schedule's cursor is the store's now".
	s.run(t, "UpsertCreates", func(t *testing.T, e *env) {
		before := e.now()
		res := e.upsert(hourlyDef("s"))
		after := e.now()
		if res.Outcome != store.UpsertCreated || res.Revision < 1 {
			t.Fatalf("ScheduleUpsert = %+v, want created", res)
		}
		sc, _ := e.schedule("s")
		e.within("Cursor", sc.Cursor, before, after)
		e.within("CreatedAt", sc.CreatedAt, before, after)
		if sc.Paused || sc.LastJob != 0 || sc.InstanceLive || sc.Revision != res.Revision {
			t.Fatalf("new schedule %+v: want not paused, no job, revision %d", sc, res.Revision)
		}
		want := hourlyDef("s")
		if !sc.SameDefinition(&want) {
			t.Fatalf("stored definition %+v, want %+v", sc.ScheduleDef, want)
		}
	})

	// ScheduleUpsert: "Upserting an identical definition writes nothing";
	// "Replacing keeps the cursor ... if the Spec or Zone changed the
	// cursor moves up to the store's now".
	s.run(t, "UpsertReplaces", func(t *testing.T, e *env) {
		first := e.upsert(hourlyDef("s"))
		sc0, _ := e.schedule("s")
		e.advance(10 * time.Minute)
		if res := e.upsert(hourlyDef("s")); res.Outcome != store.UpsertUnchanged || res.Revision != first.Revision {
			t.Fatalf("identical upsert = %+v, want unchanged at revision %d", res, first.Revision)
		}
		d := hourlyDef("s")
		d.Template.Payload = []byte(`{"n":2}`)
		d.NoOverlap, d.CatchUp = true, core.CatchUpCoalesce
		res := e.upsert(d)
		sc, _ := e.schedule("s")
		if res.Outcome != store.UpsertUpdated || res.Revision <= first.Revision || sc.Revision != res.Revision {
			t.Fatalf("changed upsert = %+v (stored revision %d), want updated past %d", res, sc.Revision, first.Revision)
		}
		if !sc.Cursor.Equal(sc0.Cursor) || !sc.NoOverlap || sc.CatchUp != core.CatchUpCoalesce || string(sc.Template.Payload) != `{"n":2}` {
			t.Fatalf("after a template change: %+v; want the new template and the old cursor %v", sc, sc0.Cursor)
		}
		d.Spec = "*/5 * * * *"
		before := e.now()
		e.upsert(d)
		sc, _ = e.schedule("s")
		e.within("Cursor after a Spec change", sc.Cursor, before, e.now())
	})

	// Validation errors name the field (issue: "rejected at registration
	// with a message naming the field").
	s.run(t, "UpsertValidates", func(t *testing.T, e *env) {
		for _, tc := range []struct {
			field string
			edit  func(*store.ScheduleDef)
		}{
			{"Name", func(d *store.ScheduleDef) { d.Name = "" }},
			{"Spec", func(d *store.ScheduleDef) { d.Spec = "61 * * * *" }},
			{"Spec", func(d *store.ScheduleDef) { d.Spec = "TZ=UTC 0 * * * *" }},
			{"Zone", func(d *store.ScheduleDef) { d.Zone = "../etc/passwd" }},
			{"Zone", func(d *store.ScheduleDef) { d.Zone = "Europe/Lon don" }},
			{"Template.WireName", func(d *store.ScheduleDef) { d.Template.WireName = "" }},
			{"Template.Queue", func(d *store.ScheduleDef) { d.Template.Queue = " q" }},
			{"Template.MaxAttempts", func(d *store.ScheduleDef) { d.Template.MaxAttempts = 0 }},
			{"Template.Tags", func(d *store.ScheduleDef) { d.Template.Tags = []job.Tag{job.Label("")} }},
			{"CatchUp", func(d *store.ScheduleDef) { d.CatchUp = 9 }},
		} {
			d := hourlyDef("s")
			tc.edit(&d)
			_, err := e.s.ScheduleUpsert(e.ctx, store.ScheduleUpsertParams{Schedule: d})
			e.wantErr("ScheduleUpsert with a bad "+tc.field, err, store.ErrInvalidParams)
			if !strings.Contains(err.Error(), tc.field+":") {
				t.Errorf("error %q does not name the field %s", err, tc.field)
			}
		}
		res, err := e.s.ScheduleList(e.ctx)
		if err != nil || len(res.Schedules) != 0 {
			t.Fatalf("ScheduleList after rejected upserts = %v, %v; want none", res.Schedules, err)
		}
	})

	// ScheduleMint: an applied plan inserts a job from the template per
	// Mint, due at Mint.At, with the schedule Tag; records it; moves the
	// cursor; makes the job the latest instance; bumps the Revision.
	s.run(t, "MintApplies", func(t *testing.T, e *env) {
		e.needAdvance()
		e.upsert(hourlyDef("s"))
		at := e.toNextHour()
		p := e.plan("s")
		res := e.mint(p)
		if !res[0].Applied || len(res[0].Jobs) != 1 {
			t.Fatalf("ScheduleMint = %+v, want one job", res)
		}
		mj := res[0].Jobs[0]
		if !mj.At.Equal(at) || mj.MakeUp || mj.Queue != "q" || !mj.DueNow {
			t.Fatalf("minted %+v, want the occurrence at %v, due now, in q", mj, at)
		}
		j := e.wantState(mj.ID, job.StateScheduled)
		wantTags := job.NormalizeTags(append(hourlyDef("s").Template.Tags, job.Keyed(store.ScheduleTagKey, "s")))
		if j.WireName != "storetest.scheduled" || j.Queue != "q" || string(j.Payload) != `{"n":1}` || j.MaxAttempts != 3 ||
			!j.ScheduledAt.Equal(at) || !slices.Equal(j.Tags, wantTags) {
			t.Fatalf("minted job %+v; want the template, due at %v, tags %v", j, at, wantTags)
		}
		sc, _ := e.schedule("s")
		if !sc.Cursor.Equal(at) || sc.LastJob != mj.ID || !sc.InstanceLive || sc.Revision <= p.Revision {
			t.Fatalf("after mint: %+v; want cursor %v, latest job %d live, revision past %d", sc, at, mj.ID, p.Revision)
		}
		occ := e.occurrences("s")
		if len(occ) != 1 || occ[0].Kind != store.OccurrenceMinted || !occ[0].At.Equal(at) || occ[0].Job != mj.ID || occ[0].Schedule != "s" {
			t.Fatalf("occurrence records %+v, want one minted at %v for job %d", occ, at, mj.ID)
		}
		// The latest instance turns terminal: not live any more.
		e.reportApplied(w1, succeeded(e.claimOne(w1, "q")))
		if sc, _ := e.schedule("s"); sc.InstanceLive {
			t.Fatal("InstanceLive after the latest job succeeded")
		}
	})

	// "A plan whose schedule is gone or whose Revision is no longer the
	// stored one is stale: nothing is written."
	s.run(t, "MintStale", func(t *testing.T, e *env) {
		e.needAdvance()
		e.upsert(hourlyDef("s"))
		e.toNextHour()
		p := e.plan("s")
		gone := p
		gone.Schedule = "nope"
		old := p
		old.Revision--
		res := e.mint(old, gone)
		if res[0].Applied || res[1].Applied || len(res[0].Jobs)+len(res[1].Jobs) != 0 {
			t.Fatalf("stale plans answered %+v, want nothing applied", res)
		}
		if n := len(e.occurrences("s")); n != 0 {
			t.Fatalf("%d occurrence records after stale plans", n)
		}
		e.claimNone(w1, "q")
		if res := e.mint(p); !res[0].Applied {
			t.Fatal("the current plan was not applied")
		}
		// Applied once, the same plan is stale.
		if res := e.mint(p); res[0].Applied {
			t.Fatal("a plan applied twice")
		}
		if n := len(e.claim(w1, 10, "q")); n != 1 {
			t.Fatalf("%d jobs minted, want 1", n)
		}
	})

	// "a job is minted at most once per (schedule, occurrence instant),
	// enforced by a unique key": even a plan at the current revision that
	// names an occurrence already recorded makes no job.
	s.run(t, "MintUniquePerOccurrence", func(t *testing.T, e *env) {
		e.needAdvance()
		e.upsert(hourlyDef("s"))
		at := e.toNextHour()
		e.mint(e.plan("s"))
		sc, _ := e.schedule("s")
		again := core.MintPlan{Schedule: "s", Revision: sc.Revision, Cursor: at, Mints: []core.Mint{{At: at}}}
		res := e.mint(again)
		if !res[0].Applied || len(res[0].Jobs) != 0 {
			t.Fatalf("re-minting a recorded occurrence = %+v, want applied with no job", res)
		}
		if n := len(e.claim(w1, 10, "q")); n != 1 {
			t.Fatalf("%d jobs for one occurrence, want 1", n)
		}
		// A skip of a recorded occurrence records nothing either.
		sc, _ = e.schedule("s")
		e.mint(core.MintPlan{Schedule: "s", Revision: sc.Revision, Cursor: at, Skips: []core.Skip{{At: at, First: at, Reason: core.SkipOverlap}}})
		if occ := e.occurrences("s"); len(occ) != 1 {
			t.Fatalf("occurrence records %+v, want the one minted", occ)
		}
	})

	// Two nodes minting the same occurrence create one job (issue 7,
	// acceptance: "Two-node mint race ... one job per occurrence").
	s.run(t, "MintRace", func(t *testing.T, e *env) {
		e.needAdvance()
		peer := e.peer()
		const rounds = 10
		e.upsert(hourlyDef("s"))
		for round := range rounds {
			at := e.toNextHour()
			p := e.plan("s")
			var wg sync.WaitGroup
			results := make([][]store.MintResult, 2)
			errs := make([]error, 2)
			for i, st := range []store.Schedules{e.s, peer} {
				wg.Go(func() { results[i], errs[i] = st.ScheduleMint(e.ctx, store.MintParams{Plans: []core.MintPlan{p}}) })
			}
			wg.Wait()
			applied, jobs := 0, 0
			for i := range 2 {
				if errs[i] != nil {
					t.Fatalf("round %d: node %d: ScheduleMint: %v", round, i, errs[i])
				}
				if results[i][0].Applied {
					applied++
				}
				jobs += len(results[i][0].Jobs)
			}
			if applied != 1 || jobs != 1 {
				t.Fatalf("round %d: %d plans applied, %d jobs minted; want 1 and 1", round, applied, jobs)
			}
			minted := e.occurrences("s", store.OccurrenceMinted)
			if len(minted) != round+1 || !minted[0].At.Equal(at) {
				t.Fatalf("round %d: minted records %+v, want %d, newest at %v", round, minted, round+1, at)
			}
		}
		n, err := e.s.JobCountByState(e.ctx, store.CountParams{Queue: "q"})
		if err != nil || n[job.StateScheduled] != rounds {
			t.Fatalf("JobCountByState = %v, %v; want %d scheduled", n, err, rounds)
		}
	})

	// ScheduleMint: "records each Mint and Skip as an occurrence record";
	// "only the newest MaxSkipRecords per schedule are kept". A mint of a
	// future occurrence is not DueNow.
	s.run(t, "MintSkipsAndFuture", func(t *testing.T, e *env) {
		e.needAdvance()
		e.upsert(hourlyDef("s"))
		base := e.toNextHour()
		sc, _ := e.schedule("s")
		p := core.MintPlan{Schedule: "s", Revision: sc.Revision, Cursor: base.Add(time.Duration(store.MaxSkipRecords+5) * time.Hour)}
		for i := range store.MaxSkipRecords + 5 {
			at := base.Add(time.Duration(i) * time.Hour)
			p.Skips = append(p.Skips, core.Skip{At: at, First: at, Reason: core.SkipOverlap})
		}
		p.Mints = []core.Mint{{At: p.Cursor}}
		res := e.mint(p)
		if len(res[0].Jobs) != 1 || res[0].Jobs[0].DueNow {
			t.Fatalf("minted %+v, want one job not due now", res[0].Jobs)
		}
		skips := e.occurrences("s", store.OccurrenceSkipped)
		if len(skips) != store.MaxSkipRecords {
			t.Fatalf("%d skip records kept, want %d", len(skips), store.MaxSkipRecords)
		}
		newest := base.Add(time.Duration(store.MaxSkipRecords+4) * time.Hour)
		if !skips[0].At.Equal(newest) || skips[0].Reason != core.SkipOverlap || skips[0].Job != 0 {
			t.Fatalf("newest skip record %+v, want an overlap at %v", skips[0], newest)
		}
		e.claimNone(w1, "q") // the job is due in the future
		sc, _ = e.schedule("s")
		missed := core.MintPlan{Schedule: "s", Revision: sc.Revision, Cursor: p.Cursor.Add(5 * time.Hour),
			Skips: []core.Skip{{At: p.Cursor.Add(5 * time.Hour), First: p.Cursor.Add(time.Hour), Reason: core.SkipMissed}}}
		e.mint(missed)
		got := e.occurrences("s", store.OccurrenceSkipped)[0]
		if got.Reason != core.SkipMissed || !got.First.Equal(p.Cursor.Add(time.Hour)) || !got.At.Equal(p.Cursor.Add(5*time.Hour)) {
			t.Fatalf("missed record %+v, want the span %v..%v", got, p.Cursor.Add(time.Hour), p.Cursor.Add(5*time.Hour))
		}
		if sc, _ := e.schedule("s"); !sc.Cursor.Equal(missed.Cursor) {
			t.Fatalf("cursor %v, want %v", sc.Cursor, missed.Cursor)
		}
	})

	// ScheduleOccurrences: "newest first, one page at a time (keyset
	// pagination on Seq)", filtered by kind; an unknown schedule has none.
	s.run(t, "Occurrences", func(t *testing.T, e *env) {
		e.needAdvance()
		e.upsert(hourlyDef("s"))
		for range 3 {
			e.toNextHour()
			e.mint(e.plan("s"))
		}
		if _, err := e.s.ScheduleTrigger(e.ctx, store.ScheduleTriggerParams{Name: "s", Actor: "ops@example"}); err != nil {
			t.Fatal(err)
		}
		all := e.occurrences("s")
		if len(all) != 4 || all[0].Kind != store.OccurrenceTriggered {
			t.Fatalf("records %+v, want 4, the trigger first", all)
		}
		for i := 1; i < len(all); i++ {
			if all[i].Seq >= all[i-1].Seq {
				t.Fatalf("records not newest first: %+v", all)
			}
		}
		page, err := e.s.ScheduleOccurrences(e.ctx, store.OccurrenceListParams{Schedule: "s", BeforeSeq: all[1].Seq, Limit: 1})
		if err != nil || len(page) != 1 || page[0].Seq != all[2].Seq {
			t.Fatalf("page after Seq %d = %+v, %v; want record %d", all[1].Seq, page, err, all[2].Seq)
		}
		if got := e.occurrences("s", store.OccurrenceTriggered); len(got) != 1 || got[0].Actor != "ops@example" {
			t.Fatalf("triggered records %+v", got)
		}
		if got := e.occurrences("nope"); len(got) != 0 {
			t.Fatalf("records of an unknown schedule: %+v", got)
		}
	})

	// SchedulePause / ScheduleResume: pausing bumps the revision (stale
	// plans), resuming moves the cursor to now ("occurrences while it was
	// paused are not missed, they are dropped"); repeating either changes
	// nothing.
	s.run(t, "PauseResume", func(t *testing.T, e *env) {
		e.needAdvance()
		e.upsert(hourlyDef("s"))
		e.toNextHour()
		p := e.plan("s")
		e.schedulePause("s", true)
		sc, _ := e.schedule("s")
		if !sc.Paused || sc.Revision <= p.Revision {
			t.Fatalf("paused schedule %+v, want paused past revision %d", sc, p.Revision)
		}
		e.schedulePause("s", true)
		if again, _ := e.schedule("s"); again.Revision != sc.Revision {
			t.Fatal("pausing a paused schedule changed its revision")
		}
		if res := e.mint(p); res[0].Applied {
			t.Fatal("a plan from before the pause applied")
		}
		e.advance(5 * time.Hour)
		e.schedulePause("s", false)
		sc, now := e.schedule("s")
		if sc.Paused || sc.Cursor.Before(now.Add(-time.Second)) {
			t.Fatalf("resumed schedule %+v, want running with its cursor at now %v", sc, now)
		}
		e.wantErr("SchedulePause(unknown)", e.s.SchedulePause(e.ctx, store.ScheduleParams{Name: "nope"}), store.ErrNotFound)
		e.wantErr("ScheduleResume(unknown)", e.s.ScheduleResume(e.ctx, store.ScheduleParams{Name: "nope"}), store.ErrNotFound)
	})

	// ScheduleTrigger: one job from the template, due now, recorded with
	// its Actor, the latest instance; allowed while paused; refused with
	// ErrOverlap under No-Overlap while the latest instance is live.
	s.run(t, "Trigger", func(t *testing.T, e *env) {
		d := hourlyDef("s")
		d.NoOverlap = true
		e.upsert(d)
		e.schedulePause("s", true)
		before := e.now()
		id, err := e.s.ScheduleTrigger(e.ctx, store.ScheduleTriggerParams{Name: "s", Actor: "alice"})
		if err != nil {
			t.Fatalf("ScheduleTrigger: %v", err)
		}
		j := e.wantState(id, job.StateScheduled)
		e.within("ScheduledAt", j.ScheduledAt, before, e.now())
		if j.WireName != d.Template.WireName || !slices.Contains(j.Tags, job.Keyed(store.ScheduleTagKey, "s")) {
			t.Fatalf("triggered job %+v", j)
		}
		if sc, _ := e.schedule("s"); sc.LastJob != id || !sc.InstanceLive {
			t.Fatalf("after trigger: %+v, want job %d as the live latest instance", sc, id)
		}
		_, err = e.s.ScheduleTrigger(e.ctx, store.ScheduleTriggerParams{Name: "s", Actor: "bob"})
		e.wantErr("ScheduleTrigger while an instance is live", err, store.ErrOverlap)
		e.reportApplied(w1, succeeded(e.claimOne(w1, "q")))
		if _, err := e.s.ScheduleTrigger(e.ctx, store.ScheduleTriggerParams{Name: "s", Actor: "bob"}); err != nil {
			t.Fatalf("ScheduleTrigger after the instance ended: %v", err)
		}
		_, err = e.s.ScheduleTrigger(e.ctx, store.ScheduleTriggerParams{Name: "nope"})
		e.wantErr("ScheduleTrigger(unknown)", err, store.ErrNotFound)
	})

	// ScheduleRemove: "deletes the schedule and its occurrence records; the
	// jobs it minted stay".
	s.run(t, "Remove", func(t *testing.T, e *env) {
		e.upsert(hourlyDef("s"))
		id, err := e.s.ScheduleTrigger(e.ctx, store.ScheduleTriggerParams{Name: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.ScheduleRemove(e.ctx, store.ScheduleParams{Name: "s"}); err != nil {
			t.Fatalf("ScheduleRemove: %v", err)
		}
		res, err := e.s.ScheduleList(e.ctx)
		if err != nil || len(res.Schedules) != 0 {
			t.Fatalf("ScheduleList after remove = %v, %v", res.Schedules, err)
		}
		if occ := e.occurrences("s"); len(occ) != 0 {
			t.Fatalf("records after remove: %+v", occ)
		}
		e.wantState(id, job.StateScheduled)
		e.wantErr("ScheduleRemove again", e.s.ScheduleRemove(e.ctx, store.ScheduleParams{Name: "s"}), store.ErrNotFound)
		// A schedule registered again under the name starts afresh.
		if res := e.upsert(hourlyDef("s")); res.Outcome != store.UpsertCreated {
			t.Fatalf("upsert after remove = %+v, want created", res)
		}
	})

	// Operator Action: "trigger a Recurring Schedule now" is audited with
	// its Actor, as are pausing, resuming and removing one.
	s.run(t, "Audited", func(t *testing.T, e *env) {
		e.upsert(hourlyDef("s"))
		id, err := e.s.ScheduleTrigger(e.ctx, store.ScheduleTriggerParams{Name: "s", Actor: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{
			e.s.SchedulePause(e.ctx, store.ScheduleParams{Name: "s", Actor: "bob"}),
			e.s.ScheduleResume(e.ctx, store.ScheduleParams{Name: "s"}),
			e.s.ScheduleRemove(e.ctx, store.ScheduleParams{Name: "s", Actor: "carol"}),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		trail, err := e.s.AuditList(e.ctx, store.AuditListParams{Queue: "q"})
		if err != nil {
			t.Fatalf("AuditList: %v", err)
		}
		type entry struct {
			action store.AuditAction
			actor  store.Actor
			job    job.ID
		}
		var got []entry
		for _, a := range trail {
			if a.Detail != store.ScheduleDetail("s") {
				t.Fatalf("audit entry %+v does not name the schedule", a)
			}
			got = append(got, entry{a.Action, a.Actor, a.JobID})
		}
		want := []entry{
			{store.AuditScheduleRemove, "carol", 0},
			{store.AuditScheduleResume, store.ActorSystem, 0},
			{store.AuditSchedulePause, "bob", 0},
			{store.AuditScheduleTrigger, "alice", id},
		}
		if !slices.Equal(got, want) {
			t.Fatalf("audit trail %+v, want %+v", got, want)
		}
	})

	// MintParams.Validate: a plan may not mint beyond its cursor or hold
	// two make-up jobs (Catch-Up Policy: "exactly one make-up job").
	s.run(t, "MintValidates", func(t *testing.T, e *env) {
		e.upsert(hourlyDef("s"))
		sc, now := e.schedule("s")
		for _, p := range []core.MintPlan{
			{Schedule: "", Revision: sc.Revision, Cursor: now},
			{Schedule: "s", Revision: sc.Revision, Cursor: now, Mints: []core.Mint{{At: now.Add(time.Hour)}}},
			{Schedule: "s", Revision: sc.Revision, Cursor: now, Mints: []core.Mint{{At: now.Add(-time.Hour), MakeUp: true}, {At: now, MakeUp: true}}},
			{Schedule: "s", Revision: sc.Revision, Cursor: now, Skips: []core.Skip{{At: now, First: now, Reason: 0}}},
		} {
			_, err := e.s.ScheduleMint(e.ctx, store.MintParams{Plans: []core.MintPlan{p}})
			e.wantErr("ScheduleMint of an impossible plan", err, store.ErrInvalidParams)
		}
		if after, _ := e.schedule("s"); after.Revision != sc.Revision {
			t.Fatal("a rejected mint changed the schedule")
		}
	})
}

func (e *env) schedulePause(name string, paused bool) {
	e.t.Helper()
	var err error
	if paused {
		err = e.s.SchedulePause(e.ctx, store.ScheduleParams{Name: name})
	} else {
		err = e.s.ScheduleResume(e.ctx, store.ScheduleParams{Name: name})
	}
	if err != nil {
		e.t.Fatalf("pause=%v %s: %v", paused, name, err)
	}
}

// peer returns a second store over the same data (Harness.Peer), or the
// store itself.
func (e *env) peer() store.Store {
	e.t.Helper()
	if e.h.Peer == nil {
		return e.s
	}
	return e.h.Peer(e.t)
}
