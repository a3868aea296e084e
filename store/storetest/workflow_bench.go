package storetest

import (
	"fmt"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// BenchWorkflowStatus measures the status read of a Workflow
// (Workflows.WorkflowGet: its row and its maintained member counts) at 100
// and at 10,000 members on the store newStore opens, one store per size.
// The read costs the same at both sizes when the counts are maintained
// rather than counted per read: compare the two ns/op.
func BenchWorkflowStatus(b *testing.B, newStore func(b *testing.B) store.Store) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			s := newStore(b)
			jobs := make([]store.NewJob, n)
			for i := range jobs {
				jobs[i] = newJob("bench")
				if i > 0 {
					// A chain of diamonds: every member after the first
					// waits on one earlier member.
					jobs[i].Dependency = store.Dependency{Parents: []store.ParentRef{store.InBatch((i - 1) / 4 * 4)}}
				}
			}
			res, err := s.WorkflowInsert(b.Context(), store.WorkflowInsertParams{Name: "bench", InsertManyParams: store.InsertManyParams{Jobs: jobs}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w, err := s.WorkflowGet(b.Context(), res.Workflow)
				if err != nil || w.Members() != n || w.Status() != job.WorkflowRunning {
					b.Fatalf("WorkflowGet = %+v, %v", w, err)
				}
			}
		})
	}
}
