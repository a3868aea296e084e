package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testMonitor(t *testing.T, s *suite) {
	// Monitor.JobGet: "returns one job or ErrNotFound".
	s.run(t, "GetNotFound", func(t *testing.T, e *env) {
		for _, id := range []job.ID{0, -1, 1, 987654} {
			_, err := e.s.JobGet(e.ctx, id)
			e.wantErr("JobGet(unknown)", err, store.ErrNotFound)
		}
		e.insertN("q", 1)
		_, err := e.s.JobGet(e.ctx, 987654)
		e.wantErr("JobGet(unknown)", err, store.ErrNotFound)
	})

	// Monitor.JobList: "newest id first", filtered by States, Queue and
	// WireName (JobListParams), each alone and together.
	s.run(t, "ListFilters", func(t *testing.T, e *env) {
		mk := func(queue, wire string) store.NewJob {
			j := newJob(queue)
			j.WireName = wire
			return j
		}
		ids := e.insert(mk("a", "x"), mk("a", "y"), mk("b", "x"), mk("b", "y"), mk("a", "x"))
		// ids[0] running, ids[1] succeeded, the rest Scheduled.
		c := e.claim(w1, 2, "a")
		for _, j := range c {
			if j.ID == ids[1] {
				e.reportApplied(w1, succeeded(j))
			} else if j.ID != ids[0] {
				t.Fatalf("claimed %d, want %d or %d (due order ties by id)", j.ID, ids[0], ids[1])
			}
		}
		desc := func(in ...job.ID) []job.ID {
			out := sorted(in)
			slices.Reverse(out)
			return out
		}
		cases := []struct {
			name string
			p    store.JobListParams
			want []job.ID
		}{
			{"all", store.JobListParams{}, desc(ids...)},
			{"queue a", store.JobListParams{JobFilter: store.JobFilter{Queue: "a"}}, desc(ids[0], ids[1], ids[4])},
			{"wire x", store.JobListParams{JobFilter: store.JobFilter{WireName: "x"}}, desc(ids[0], ids[2], ids[4])},
			{"scheduled", store.JobListParams{JobFilter: store.JobFilter{States: []job.State{job.StateScheduled}}}, desc(ids[2], ids[3], ids[4])},
			{"running or succeeded", store.JobListParams{JobFilter: store.JobFilter{States: []job.State{job.StateRunning, job.StateSucceeded}}}, desc(ids[0], ids[1])},
			{"a, x, scheduled", store.JobListParams{JobFilter: store.JobFilter{Queue: "a", WireName: "x", States: []job.State{job.StateScheduled}}}, desc(ids[4])},
			{"no match", store.JobListParams{JobFilter: store.JobFilter{Queue: "nope"}}, nil},
		}
		for _, c := range cases {
			got, err := e.s.JobList(e.ctx, c.p)
			if err != nil {
				t.Fatalf("JobList(%s): %v", c.name, err)
			}
			e.wantIDs("JobList("+c.name+")", idsOf(got), c.want)
		}
	})

	// Monitor.JobList: "one page at a time (keyset pagination on id)";
	// JobListParams.BeforeID: "pass the last id of the previous page".
	s.run(t, "ListKeysetPagination", func(t *testing.T, e *env) {
		inserted := e.insertN("q", 10)
		e.insertN("other", 3)
		var all []job.ID
		var before job.ID
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
			page, err := e.s.JobList(e.ctx, store.JobListParams{JobFilter: store.JobFilter{Queue: "q"}, Limit: 3, BeforeID: before})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > 3 {
				t.Fatalf("page of %d jobs, want at most 3", len(page))
			}
			if len(page) == 0 {
				break
			}
			all = append(all, idsOf(page)...)
			before = page[len(page)-1].ID
		}
		want := sorted(inserted)
		slices.Reverse(want)
		e.wantIDs("all pages", all, want)
	})

	// JobListParams.Limit: "0 means 100".
	s.run(t, "ListDefaultPage", func(t *testing.T, e *env) {
		e.insertN("q", 105)
		got, err := e.s.JobList(e.ctx, store.JobListParams{})
		if err != nil || len(got) != 100 {
			t.Fatalf("JobList(Limit 0) = %d jobs, %v; want 100", len(got), err)
		}
	})

	// JobList returns whole jobs, as JobGet does.
	s.run(t, "ListReturnsWholeJobs", func(t *testing.T, e *env) {
		nj := newJob("q")
		nj.Payload = []byte("p")
		nj.Tags = []job.Tag{job.Label("t")}
		nj.ScheduledAt = e.now().Truncate(time.Second).Add(-time.Minute)
		id := e.insert(nj)[0]
		got, err := e.s.JobList(e.ctx, store.JobListParams{})
		if err != nil || len(got) != 1 {
			t.Fatalf("JobList = %v, %v", got, err)
		}
		if d := jobDiff(e.get(id), got[0]); d != "" {
			t.Fatalf("JobList and JobGet disagree (-get +list):\n%s", d)
		}
	})

	// Monitor.JobCountByState: "counts jobs per state, optionally in one
	// Queue". A state with no jobs counts 0, whether present or absent.
	s.run(t, "CountByState", func(t *testing.T, e *env) {
		count := func(queue string) map[job.State]int {
			t.Helper()
			m, err := e.s.JobCountByState(e.ctx, store.CountParams{Queue: queue})
			if err != nil {
				t.Fatalf("JobCountByState(%q): %v", queue, err)
			}
			for st, n := range m {
				if n == 0 {
					delete(m, st)
				}
			}
			return m
		}
		if got := count(""); len(got) != 0 {
			t.Fatalf("counts of an empty store = %v", got)
		}
		e.insertN("a", 4)
		e.insertN("b", 2)
		a := e.claim(w1, 3, "a")
		e.reportApplied(w1, succeeded(a[0]))
		e.reportApplied(w1, decide(a[1], core.ResultUnroutable, 0))
		check := func(queue string, want map[job.State]int) {
			t.Helper()
			got := count(queue)
			if len(got) != len(want) {
				t.Fatalf("JobCountByState(%q) = %v, want %v", queue, got, want)
			}
			for st, n := range want {
				if got[st] != n {
					t.Fatalf("JobCountByState(%q) = %v, want %v", queue, got, want)
				}
			}
		}
		check("", map[job.State]int{job.StateScheduled: 3, job.StateRunning: 1, job.StateSucceeded: 1, job.StateQuarantined: 1})
		check("a", map[job.State]int{job.StateScheduled: 1, job.StateRunning: 1, job.StateSucceeded: 1, job.StateQuarantined: 1})
		check("b", map[job.State]int{job.StateScheduled: 2})
		check("nope", map[job.State]int{})
	})
}
