package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
)

// testTimeRange checks store.MinYear and store.MaxYear: "every adapter
// represents every instant of years MinYear to MaxYear, and a time outside
// them is ErrInvalidParams on every adapter alike" — for a due time at
// insert, a Reschedule's new time and a job filter's created range. No
// adapter may wrap such a time to another date, clamp it, or fail with its
// database's own error.
func testTimeRange(t *testing.T, s *suite) {
	first := time.Date(store.MinYear, time.January, 1, 0, 0, 1, 0, time.UTC)
	last := time.Date(store.MaxYear, time.December, 31, 23, 59, 59, 999999000, time.UTC)
	outside := []time.Time{
		time.Date(store.MaxYear+1, time.January, 1, 0, 0, 0, 0, time.UTC),
		time.Date(300000, time.January, 1, 0, 0, 0, 0, time.UTC),
		time.Date(store.MinYear-1, time.December, 31, 23, 59, 59, 0, time.UTC),
		time.Date(-284555, time.June, 1, 0, 0, 0, 0, time.UTC),
		// In UTC this instant is in MaxYear+1, whatever its zone says.
		time.Date(store.MaxYear, time.December, 31, 23, 0, 0, 0, time.FixedZone("UTC-2", -2*3600)),
	}

	// The edges of the range round-trip exactly.
	s.run(t, "EdgesStore", func(t *testing.T, e *env) {
		ids := e.insert(at("q", first), at("q", last))
		for i, want := range []time.Time{first, last} {
			if got := e.get(ids[i]).ScheduledAt; !got.Equal(want) {
				t.Fatalf("job due %s reads back due %s", want.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano))
			}
		}
	})

	s.run(t, "InsertOutside", func(t *testing.T, e *env) {
		for _, due := range outside {
			_, err := e.s.JobInsertMany(e.ctx, store.InsertManyParams{Jobs: []store.NewJob{newJob("q"), at("q", due)}})
			e.wantErr(fmt.Sprintf("JobInsertMany(due %s)", due.Format(time.RFC3339)), err, store.ErrInvalidParams)
		}
		if got, err := e.s.JobList(e.ctx, store.JobListParams{}); err != nil || len(got) != 0 {
			t.Fatalf("JobList after refused inserts = %d jobs, %v; want none", len(got), err)
		}
	})

	s.run(t, "RescheduleOutside", func(t *testing.T, e *env) {
		id := e.insert(at("q", e.now().Add(time.Hour)))[0]
		before := e.get(id)
		for _, to := range outside {
			_, err := e.s.JobReschedule(e.ctx, store.JobRescheduleParams{ID: id, Actor: actor, ScheduledAt: to})
			e.wantErr(fmt.Sprintf("JobReschedule(to %s)", to.Format(time.RFC3339)), err, store.ErrInvalidParams)
		}
		e.unchanged(before)
		for _, to := range []time.Time{first, last} {
			got, err := e.s.JobReschedule(e.ctx, store.JobRescheduleParams{ID: id, Actor: actor, ScheduledAt: to})
			if err != nil || !got.ScheduledAt.Equal(to) {
				t.Fatalf("JobReschedule(to %s) = due %s, %v", to.Format(time.RFC3339Nano), got.ScheduledAt.Format(time.RFC3339Nano), err)
			}
		}
	})

	s.run(t, "FilterOutside", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		for _, b := range outside {
			_, err := e.s.JobList(e.ctx, store.JobListParams{JobFilter: store.JobFilter{CreatedFrom: b}})
			e.wantErr(fmt.Sprintf("JobList(created from %s)", b.Format(time.RFC3339)), err, store.ErrInvalidParams)
			_, err = e.s.JobList(e.ctx, store.JobListParams{JobFilter: store.JobFilter{CreatedTo: b}})
			e.wantErr(fmt.Sprintf("JobList(created to %s)", b.Format(time.RFC3339)), err, store.ErrInvalidParams)
		}
	})
}
