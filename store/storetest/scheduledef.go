package storetest

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testScheduleDef checks the rules about a Recurring Schedule's definition
// that every store applies the same way: what makes two definitions the
// same, which changes move the cursor, and how the template makes a job.
func testScheduleDef(t *testing.T, s *suite) {
	// JobTemplate.Tags are a set (NewJob: "Tags are stored as a set"):
	// stored normalized, and a definition that differs only in Tag order
	// or repeats is the identical definition ("Upserting an identical
	// definition writes nothing"). Any Tag text that validates comes back
	// as it went in.
	s.run(t, "UpsertTagsAreASet", func(t *testing.T, e *env) {
		d := hourlyDef("s")
		odd := job.Keyed(`k"\[`, `v],ü "x"`)
		d.Template.Tags = []job.Tag{job.Keyed("team", "ops"), odd, job.Label("nightly"), job.Keyed("team", "ops"), job.Label("a")}
		first := e.upsert(d)
		sc, _ := e.schedule("s")
		if want := job.NormalizeTags(d.Template.Tags); !slices.Equal(sc.Template.Tags, want) {
			t.Fatalf("stored template Tags %v, want the set %v", sc.Template.Tags, want)
		}
		again := d
		again.Template.Tags = []job.Tag{job.Label("nightly"), job.Label("a"), odd, job.Keyed("team", "ops"), job.Label("a")}
		if !again.SameDefinition(&d) {
			t.Fatal("store.ScheduleDef.SameDefinition tells two orders of one Tag set apart")
		}
		if res := e.upsert(again); res.Outcome != store.UpsertUnchanged || res.Revision != first.Revision {
			t.Fatalf("upsert of the same Tag set in another order = %+v, want unchanged at revision %d", res, first.Revision)
		}
	})

	// "a nil and an empty payload are the same": a store keeps neither, so
	// re-registering one as the other writes nothing.
	s.run(t, "UpsertEmptyPayloadIsNoPayload", func(t *testing.T, e *env) {
		d := hourlyDef("s")
		d.Template.Payload = nil
		first := e.upsert(d)
		d.Template.Payload = []byte{}
		if res := e.upsert(d); res.Outcome != store.UpsertUnchanged || res.Revision != first.Revision {
			t.Fatalf("upsert with an empty payload after none = %+v, want unchanged", res)
		}
		if sc, _ := e.schedule("s"); len(sc.Template.Payload) != 0 {
			t.Fatalf("stored payload %q, want none", sc.Template.Payload)
		}
	})

	// ScheduleUpsert: every field of the definition counts ("replaces the
	// definition"), and "Replacing keeps the cursor ...; if the Spec or
	// Zone changed the cursor moves up to the store's now".
	s.run(t, "UpsertEachFieldCounts", func(t *testing.T, e *env) {
		e.needAdvance()
		for i, tc := range []struct {
			field string
			moves bool
			edit  func(*store.ScheduleDef)
		}{
			{"Spec", true, func(d *store.ScheduleDef) { d.Spec = "*/5 * * * *" }},
			{"Zone", true, func(d *store.ScheduleDef) { d.Zone = "Europe/Paris" }},
			{"CatchUp", false, func(d *store.ScheduleDef) { d.CatchUp = core.CatchUpCoalesce }},
			{"NoOverlap", false, func(d *store.ScheduleDef) { d.NoOverlap = true }},
			{"Template.WireName", false, func(d *store.ScheduleDef) { d.Template.WireName = "storetest.other" }},
			{"Template.Queue", false, func(d *store.ScheduleDef) { d.Template.Queue = "q2" }},
			{"Template.Payload", false, func(d *store.ScheduleDef) { d.Template.Payload = []byte(`{"n":2}`) }},
			{"Template.MaxAttempts", false, func(d *store.ScheduleDef) { d.Template.MaxAttempts = 4 }},
			{"Template.Tags", false, func(d *store.ScheduleDef) { d.Template.Tags = append(d.Template.Tags, job.Label("extra")) }},
		} {
			base := hourlyDef("s" + strconv.Itoa(i))
			first := e.upsert(base)
			sc0, _ := e.schedule(base.Name)
			e.advance(10 * time.Minute)
			d := base
			d.Template.Tags = slices.Clone(base.Template.Tags)
			tc.edit(&d)
			if d.SameDefinition(&base) || d.MovesCursorFrom(&base) != tc.moves {
				t.Fatalf("%s: store.ScheduleDef says same %v, moves the cursor %v; want a change that moves it %v",
					tc.field, d.SameDefinition(&base), d.MovesCursorFrom(&base), tc.moves)
			}
			before := e.now()
			res := e.upsert(d)
			if res.Outcome != store.UpsertUpdated || res.Revision <= first.Revision {
				t.Fatalf("%s: upsert = %+v, want updated past revision %d", tc.field, res, first.Revision)
			}
			sc, _ := e.schedule(d.Name)
			switch {
			case tc.moves:
				e.within(tc.field+": Cursor", sc.Cursor, before, e.now())
			case !sc.Cursor.Equal(sc0.Cursor):
				t.Fatalf("%s: cursor moved from %v to %v; only a Spec or Zone change moves it", tc.field, sc0.Cursor, sc.Cursor)
			}
			if res := e.upsert(d); res.Outcome != store.UpsertUnchanged {
				t.Fatalf("%s: repeated upsert = %+v, want unchanged", tc.field, res)
			}
		}
	})

	// ScheduleMint and ScheduleTrigger make a job "from the template ...
	// with the schedule's Tags plus the Keyed Tag ScheduleTagKey→name", as
	// a set: a template Tag equal to the schedule Tag is carried once.
	s.run(t, "TemplateJobTags", func(t *testing.T, e *env) {
		e.needAdvance()
		d := hourlyDef("s")
		d.Template.Tags = []job.Tag{job.Keyed(store.ScheduleTagKey, "s"), job.Label("nightly"), job.Keyed(store.ScheduleTagKey, "other")}
		e.upsert(d)
		want := []job.Tag{job.Label("nightly"), job.Keyed(store.ScheduleTagKey, "other"), job.Keyed(store.ScheduleTagKey, "s")}
		if got := d.NewJob(time.Time{}).Tags; !slices.Equal(got, want) {
			t.Fatalf("store.ScheduleDef.NewJob Tags %v, want %v", got, want)
		}
		id, err := e.s.ScheduleTrigger(e.ctx, store.ScheduleTriggerParams{Name: "s"})
		if err != nil {
			t.Fatalf("ScheduleTrigger: %v", err)
		}
		if got := e.get(id).Tags; !slices.Equal(got, want) {
			t.Fatalf("triggered job Tags %v, want %v", got, want)
		}
		e.toNextHour()
		res := e.mint(e.plan("s"))
		if len(res[0].Jobs) != 1 {
			t.Fatalf("ScheduleMint = %+v, want one job", res)
		}
		if got := e.get(res[0].Jobs[0].ID).Tags; !slices.Equal(got, want) {
			t.Fatalf("minted job Tags %v, want %v", got, want)
		}
		facet, err := e.s.TagFacet(e.ctx, store.TagFacetParams{})
		if err != nil {
			t.Fatalf("TagFacet: %v", err)
		}
		i := slices.IndexFunc(facet, func(c store.TagCount) bool { return c.Tag == job.Keyed(store.ScheduleTagKey, "s") })
		if i < 0 || facet[i].Count != 2 {
			t.Fatalf("Tag Facet %v, want schedule=s on 2 jobs (each carries it once)", facet)
		}
	})
}
