package storetest

import (
	"slices"
	"sync"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testSuggestPrune checks Monitor.TagSuggest against retention: "it never
// offers a Tag no stored job carries: when JobPurge removes the last job
// carrying a Tag, the Tag leaves the suggestions with it" (glossary, Tag
// Suggest: the suggestion promises only that the Tag exists).
func testSuggestPrune(t *testing.T, s *suite) {
	acme, urgent := job.Keyed("tenant", "acme"), job.Label("urgent")
	lower, upper := job.Label("beta"), job.Label("Beta")
	delta := job.Label("from-an-outcome")

	s.run(t, "PurgeDropsTagsNoJobCarries", func(t *testing.T, e *env) {
		tagged := func(tags ...job.Tag) store.NewJob {
			j := withMax("q", 1)
			j.Tags = tags
			return j
		}
		gone := e.insert(tagged(acme, urgent), tagged(lower))
		for _, j := range e.claim(w1, 2, "q") {
			o := succeeded(j)
			o.TagDelta = []job.Tag{delta}
			e.reportApplied(w1, o)
		}
		kept := e.insert(tagged(acme), tagged(upper))
		e.wantSuggest("before the purge", upper, lower, delta, acme, urgent)

		if n := e.purge(100, 0, job.StateSucceeded); n != len(gone) {
			t.Fatalf("purged %d jobs, want %d", n, len(gone))
		}
		// acme and Beta are still carried; beta (another Tag, by case),
		// urgent and the Tag an outcome added went with their jobs.
		e.wantSuggest("after the purge", upper, acme)

		// The last job carrying acme goes: so does acme.
		for _, j := range e.claim(w1, 2, "q") {
			if j.ID == kept[0] {
				e.reportApplied(w1, succeeded(j))
			}
		}
		e.purge(100, 0, job.StateSucceeded)
		e.wantSuggest("after the last acme job's purge", upper)

		// A pruned Tag comes back with the next job carrying it.
		e.insert(tagged(urgent))
		e.wantSuggest("after urgent is used again", upper, urgent)
	})

	// Two nodes purging, at once, the last two jobs that carry a Tag drop
	// it between them: neither batch keeps it for the other's job. (Without
	// a Peer both nodes share Store.)
	s.run(t, "ConcurrentPurges", func(t *testing.T, e *env) {
		peer := e.s
		if e.h.Peer != nil {
			peer = e.h.Peer(t)
		}
		const pairs = 8
		var jobs []store.NewJob
		for range pairs {
			for range 2 {
				j := withMax("q", 1)
				j.Tags = []job.Tag{acme, urgent}
				jobs = append(jobs, j)
			}
		}
		e.insert(jobs...)
		for _, j := range e.claim(w1, len(jobs), "q") {
			e.reportApplied(w1, succeeded(j))
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, st := range []store.Store{e.s, peer} {
			wg.Go(func() {
				for {
					res, err := st.JobPurge(e.ctx, store.PurgeParams{States: []job.State{job.StateSucceeded}, Limit: 1})
					if err != nil || res.Purged == 0 {
						errs[i] = err
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("JobPurge: %v", err)
			}
		}
		e.wantSuggest("after both nodes purged every job")
	})
}

// wantSuggest requires TagSuggest with the empty prefix to offer exactly
// want, in store.CompareSuggestions order.
func (e *env) wantSuggest(when string, want ...job.Tag) {
	e.t.Helper()
	got, err := e.s.TagSuggest(e.ctx, store.TagSuggestParams{Limit: 1000})
	if err != nil {
		e.t.Fatalf("TagSuggest %s: %v", when, err)
	}
	if !slices.Equal(got, want) {
		e.t.Fatalf("TagSuggest %s = %v, want %v", when, got, want)
	}
}
