package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Scale sizes of the Tag Facet / Tag Suggest test.
const (
	scaleJobs    = 100_000
	scaleTenants = 3_000
	scaleBatch   = 10_000
)

// testTagsAtScale runs Tag Facet and Tag Suggest over 100,000 jobs carrying
// a few thousand distinct Tags, inserted in bulk (JobInsertMany batches of
// 10,000, on a store with the Job History Policy Off so the insert writes
// only what the reads need). Skipped with -short.
func testTagsAtScale(t *testing.T, s *suite) {
	s.run(t, "FacetAndSuggestAt100k", func(t *testing.T, e *env) {
		if testing.Short() {
			t.Skip("storetest: -short skips the 100,000-job Tag test")
		}
		st := e.h.WithHistory(store.HistoryOff)
		tagsOf := func(i int) []job.Tag {
			tags := []job.Tag{job.Keyed("tenant", fmt.Sprintf("T%d", i%scaleTenants)), job.Keyed("region", fmt.Sprintf("r%d", i%5))}
			if i%2 == 0 {
				tags = append(tags, job.Label("hot"))
			}
			return tags
		}
		for lo := 0; lo < scaleJobs; lo += scaleBatch {
			batch := make([]store.NewJob, scaleBatch)
			for k := range batch {
				batch[k] = newJob("q")
				batch[k].Tags = tagsOf(lo + k)
			}
			if _, err := st.JobInsertMany(e.ctx, store.InsertManyParams{Jobs: batch}); err != nil {
				t.Fatalf("JobInsertMany at %d: %v", lo, err)
			}
		}

		// Glossary, Tag Facet: count-ranked, capped to the top entries.
		facet, err := st.TagFacet(e.ctx, store.TagFacetParams{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		wantFacet(t, "100k, top 3", facet, []store.TagCount{
			{Tag: job.Label("hot"), Count: scaleJobs / 2},
			{Tag: job.Keyed("region", "r0"), Count: scaleJobs / 5},
			{Tag: job.Keyed("region", "r1"), Count: scaleJobs / 5},
		})
		// Within a slice: tenant T7 holds jobs 7, 3007, … — all odd, all
		// in region r2.
		in := (scaleJobs-7-1)/scaleTenants + 1
		facet, err = st.TagFacet(e.ctx, store.TagFacetParams{JobFilter: store.JobFilter{Tags: []job.Tag{job.Keyed("tenant", "T7")}}})
		if err != nil {
			t.Fatal(err)
		}
		wantFacet(t, "100k, within tenant=T7", facet, []store.TagCount{
			{Tag: job.Keyed("region", "r2"), Count: in},
			{Tag: job.Keyed("tenant", "T7"), Count: in},
		})
		list, err := st.JobList(e.ctx, store.JobListParams{JobFilter: store.JobFilter{Tags: []job.Tag{job.Keyed("tenant", "T7")}}, Limit: 1000})
		if err != nil || len(list) != in {
			t.Fatalf("JobList(tenant=T7) = %d jobs, %v; want %d", len(list), err, in)
		}

		// Glossary, Tag Suggest: case-insensitive prefix, lexicographic,
		// canonical casing; checked against a plain sort of every Tag.
		var all []job.Tag
		for i := range scaleTenants {
			all = append(all, job.Keyed("tenant", fmt.Sprintf("T%d", i)))
		}
		for i := range 5 {
			all = append(all, job.Keyed("region", fmt.Sprintf("r%d", i)))
		}
		all = append(all, job.Label("hot"))
		slices.SortFunc(all, store.CompareSuggestions)
		for _, prefix := range []string{"tenant=t12", "TENANT=T29", "Re", "h", "tenant=t", "nope"} {
			var want []job.Tag
			for _, tag := range all {
				if strings.HasPrefix(strings.ToLower(tag.String()), strings.ToLower(prefix)) && len(want) < 20 {
					want = append(want, tag)
				}
			}
			got, err := st.TagSuggest(e.ctx, store.TagSuggestParams{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("TagSuggest(%q) = %v, want %v", prefix, got, want)
			}
		}
	})
}
