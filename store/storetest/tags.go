package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testTags checks the Monitor reads over Tags and the job-list filters:
// exact Tag filters, the Retrying view, the created-time range, Tag Facet,
// Tag Suggest and the counts by Queue and state.
func testTags(t *testing.T, s *suite) {
	tagged := func(queue string, tags ...job.Tag) store.NewJob {
		j := newJob(queue)
		j.Tags = tags
		return j
	}
	filter := func(f store.JobFilter) store.JobListParams { return store.JobListParams{JobFilter: f} }

	// Glossary, Tag Suggest: "job filtering stays exact-match"; a job
	// matches when it carries every Tag of the filter.
	s.run(t, "ListFiltersByExactTags", func(t *testing.T, e *env) {
		ids := e.insert(
			tagged("q", job.Keyed("tenant", "acme"), job.Label("urgent")),
			tagged("q", job.Keyed("tenant", "Acme")),
			tagged("q", job.Keyed("tenant", "acme")),
			tagged("q", job.Label("tenant=acme")),
			tagged("r", job.Keyed("tenant", "acme"), job.Keyed("variant", "TP53"), job.Keyed("variant", "BRCA1")),
		)
		cases := []struct {
			name string
			tags []job.Tag
			want []job.ID
		}{
			{"keyed", []job.Tag{job.Keyed("tenant", "acme")}, []job.ID{ids[4], ids[2], ids[0]}},
			{"case matters", []job.Tag{job.Keyed("tenant", "Acme")}, []job.ID{ids[1]}},
			{"label is not keyed", []job.Tag{job.Label("tenant=acme")}, []job.ID{ids[3]}},
			{"all of them", []job.Tag{job.Keyed("tenant", "acme"), job.Label("urgent")}, []job.ID{ids[0]}},
			{"one key, two values", []job.Tag{job.Keyed("variant", "BRCA1"), job.Keyed("variant", "TP53")}, []job.ID{ids[4]}},
			{"no prefix match", []job.Tag{job.Keyed("tenant", "ac")}, nil},
		}
		for _, c := range cases {
			e.wantIDs("JobList(tags "+c.name+")", e.list(filter(store.JobFilter{Tags: c.tags})), c.want)
		}
		e.wantIDs("JobList(tags and queue)", e.list(filter(store.JobFilter{Queue: "r", Tags: []job.Tag{job.Keyed("tenant", "acme")}})), []job.ID{ids[4]})
		page := e.list(store.JobListParams{JobFilter: store.JobFilter{Tags: []job.Tag{job.Keyed("tenant", "acme")}}, Limit: 2, BeforeID: ids[4]})
		e.wantIDs("JobList(tags, second page)", page, []job.ID{ids[2], ids[0]})
		_, err := e.s.JobList(e.ctx, filter(store.JobFilter{Tags: []job.Tag{job.Label("")}}))
		e.wantErr("JobList(empty tag)", err, store.ErrInvalidParams)
	})

	// Glossary, Retrying: "A Scheduled job that carries a Retry Cause ... A
	// new job, a requeued job and a job a stopping worker handed back are
	// Scheduled but not Retrying ... Leaves the view when the job is claimed
	// again."
	s.run(t, "RetryingView", func(t *testing.T, e *env) {
		e.insertN("q", 3)
		a := e.claimOne(w1, "q")
		b := e.claimOne(w1, "q")
		e.reportApplied(w1, failed(a, time.Hour))
		e.relinquish(w1, b.Lease())
		retrying := filter(store.JobFilter{Retrying: true})
		e.wantIDs("Retrying view", e.list(retrying), []job.ID{a.ID})
		e.wantIDs("Retrying view in another queue", e.list(filter(store.JobFilter{Retrying: true, Queue: "other"})), nil)
		e.needAdvance()
		e.advance(time.Hour)
		if c := e.claim(w1, 3, "q"); !slices.Contains(idsOf(c), a.ID) {
			t.Fatalf("claimed %v, want the retrying job %d among them", idsOf(c), a.ID)
		}
		e.wantIDs("Retrying view after the claim", e.list(retrying), nil)
	})

	// JobFilter.CreatedFrom/CreatedTo: a half-open range on the creation
	// time.
	s.run(t, "ListFiltersByCreatedTime", func(t *testing.T, e *env) {
		e.needAdvance()
		t0 := e.now()
		first := e.insertN("q", 1)[0]
		e.advance(time.Minute)
		t1 := e.now()
		second := e.insertN("q", 1)[0]
		e.advance(time.Minute)
		t2 := e.now()
		e.wantIDs("from t1", e.list(filter(store.JobFilter{CreatedFrom: t1})), []job.ID{second})
		e.wantIDs("to t1", e.list(filter(store.JobFilter{CreatedTo: t1})), []job.ID{first})
		e.wantIDs("t0 to t2", e.list(filter(store.JobFilter{CreatedFrom: t0, CreatedTo: t2})), []job.ID{second, first})
		_, err := e.s.JobList(e.ctx, filter(store.JobFilter{CreatedFrom: t2, CreatedTo: t0}))
		e.wantErr("JobList(inverted range)", err, store.ErrInvalidParams)
	})

	// Glossary, Tag Facet: "A count-ranked breakdown of the Tags present
	// within the currently filtered slice of jobs, capped to the top
	// entries".
	s.run(t, "Facet", func(t *testing.T, e *env) {
		e.insert(
			tagged("q", job.Keyed("tenant", "acme"), job.Label("urgent")),
			tagged("q", job.Keyed("tenant", "acme")),
			tagged("q", job.Keyed("tenant", "globex"), job.Label("urgent")),
			tagged("q", job.Keyed("tenant", "acme"), job.Label("b")),
			tagged("r", job.Keyed("tenant", "globex"), job.Label("a")),
			newJob("q"),
		)
		got := e.facet(store.TagFacetParams{})
		want := []store.TagCount{
			{Tag: job.Keyed("tenant", "acme"), Count: 3},
			{Tag: job.Label("urgent"), Count: 2},
			{Tag: job.Keyed("tenant", "globex"), Count: 2},
			{Tag: job.Label("a"), Count: 1},
			{Tag: job.Label("b"), Count: 1},
		}
		wantFacet(t, "whole store", got, want)
		wantFacet(t, "top 2", e.facet(store.TagFacetParams{Limit: 2}), want[:2])
		wantFacet(t, "queue r", e.facet(store.TagFacetParams{JobFilter: store.JobFilter{Queue: "r"}}), []store.TagCount{
			{Tag: job.Label("a"), Count: 1}, {Tag: job.Keyed("tenant", "globex"), Count: 1},
		})
		wantFacet(t, "within urgent", e.facet(store.TagFacetParams{JobFilter: store.JobFilter{Tags: []job.Tag{job.Label("urgent")}}}), []store.TagCount{
			{Tag: job.Label("urgent"), Count: 2}, {Tag: job.Keyed("tenant", "acme"), Count: 1}, {Tag: job.Keyed("tenant", "globex"), Count: 1},
		})
		e.claimOne(w1, "q")
		wantFacet(t, "running", e.facet(store.TagFacetParams{JobFilter: store.JobFilter{States: []job.State{job.StateRunning}}}), []store.TagCount{
			{Tag: job.Label("urgent"), Count: 1}, {Tag: job.Keyed("tenant", "acme"), Count: 1},
		})
	})

	// Glossary, Tag Suggest: "case-insensitive prefix-completion ... over all
	// Tags in the store, ordered lexicographically ... carries the canonical
	// stored casing".
	s.run(t, "Suggest", func(t *testing.T, e *env) {
		e.insert(
			tagged("q", job.Keyed("tenant", "Acme"), job.Label("urgent")),
			tagged("q", job.Keyed("tenant", "acme"), job.Keyed("Tenant", "Zeta")),
			tagged("r", job.Label("TENure"), job.Label("tenant=acme")),
		)
		j := e.claimOne(w1, "r")
		o := succeeded(j)
		o.TagDelta = []job.Tag{job.Keyed("tenant", "beta")} // runtime Tags count too
		e.reportApplied(w1, o)
		cases := []struct {
			prefix string
			limit  int
			want   []job.Tag
		}{
			// Ties in the folded form go by the stored form, then Labels first.
			{"ten", 0, []job.Tag{job.Keyed("tenant", "Acme"), job.Label("tenant=acme"), job.Keyed("tenant", "acme"), job.Keyed("tenant", "beta"), job.Keyed("Tenant", "Zeta"), job.Label("TENure")}},
			{"TENANT=A", 0, []job.Tag{job.Keyed("tenant", "Acme"), job.Label("tenant=acme"), job.Keyed("tenant", "acme")}},
			{"tenu", 0, []job.Tag{job.Label("TENure")}},
			{"u", 0, []job.Tag{job.Label("urgent")}},
			{"ten", 2, []job.Tag{job.Keyed("tenant", "Acme"), job.Label("tenant=acme")}},
			{"x", 0, nil},
			{"enant", 0, nil}, // prefix only, never a substring
		}
		for _, c := range cases {
			got, err := e.s.TagSuggest(e.ctx, store.TagSuggestParams{Prefix: c.prefix, Limit: c.limit})
			if err != nil {
				t.Fatalf("TagSuggest(%q): %v", c.prefix, err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("TagSuggest(%q, %d) = %v, want %v", c.prefix, c.limit, got, c.want)
			}
		}
		all, err := e.s.TagSuggest(e.ctx, store.TagSuggestParams{})
		if err != nil || len(all) != 7 {
			t.Fatalf("TagSuggest(\"\") = %v, %v; want all 7 Tags", all, err)
		}
	})

	// Monitor.JobCountByState and JobCountByQueue follow every move: insert,
	// claim, outcome, cancel, requeue.
	s.run(t, "CountsFollowMoves", func(t *testing.T, e *env) {
		e.insertN("a", 3)
		e.insert(withMax("b", 1))
		j := e.claimOne(w1, "a")
		e.reportApplied(w1, succeeded(j))
		k := e.claimOne(w1, "b")
		e.reportApplied(w1, failed(k, 0))
		r := e.claimOne(w1, "a")
		if err := e.cancel(r.ID + 1); err != nil {
			t.Fatal(err)
		}
		want := []store.QueueStateCount{
			{Queue: "a", State: job.StateRunning, Count: 1},
			{Queue: "a", State: job.StateSucceeded, Count: 1},
			{Queue: "a", State: job.StateCancelled, Count: 1},
			{Queue: "b", State: job.StateDeadLettered, Count: 1},
		}
		e.wantCounts(want)
		if _, err := e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: k.ID, Actor: actor}); err != nil {
			t.Fatal(err)
		}
		want[3].State = job.StateScheduled
		e.wantCounts(want)
		byState, err := e.s.JobCountByState(e.ctx, store.CountParams{})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(byState) != fmt.Sprint(map[job.State]int{job.StateScheduled: 1, job.StateRunning: 1, job.StateSucceeded: 1, job.StateCancelled: 1}) {
			t.Fatalf("JobCountByState = %v", byState)
		}
		inA, err := e.s.JobCountByState(e.ctx, store.CountParams{Queue: "a"})
		if err != nil || len(inA) != 3 || inA[job.StateScheduled] != 0 {
			t.Fatalf("JobCountByState(a) = %v, %v", inA, err)
		}
	})
}

func (e *env) facet(p store.TagFacetParams) []store.TagCount {
	e.t.Helper()
	out, err := e.s.TagFacet(e.ctx, p)
	if err != nil {
		e.t.Fatalf("TagFacet: %v", err)
	}
	return out
}

func (e *env) wantCounts(want []store.QueueStateCount) {
	e.t.Helper()
	got, err := e.s.JobCountByQueue(e.ctx)
	if err != nil {
		e.t.Fatalf("JobCountByQueue: %v", err)
	}
	if !slices.Equal(got, want) {
		e.t.Fatalf("JobCountByQueue = %v, want %v", got, want)
	}
}

func wantFacet(t *testing.T, what string, got, want []store.TagCount) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("TagFacet(%s) = %v, want %v", what, got, want)
	}
}
