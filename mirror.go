package backwave

import (
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The public structs that show a job, store or shell value (JobInfo,
// Transition, AuditEntry, …) and their converters are generated from one
// table, internal/mirror/table.go, into mirror_gen.go. What follows are
// the helpers the table's type conversions call.

//go:generate go run ./internal/mirror/mirrorgen

// parentEdgesOf converts a job's Dependency parents; nil when it has none.
func parentEdgesOf(ps []store.ParentEdge) []ParentEdge {
	var out []ParentEdge
	for _, p := range ps {
		out = append(out, parentEdgeOf(p))
	}
	return out
}

// stateCounts converts counts by state, leaving out the states counted 0.
func stateCounts(counts map[job.State]int) map[JobState]int {
	out := make(map[JobState]int, len(counts))
	for s, c := range counts {
		if c != 0 {
			out[JobState(s)] = c
		}
	}
	return out
}
