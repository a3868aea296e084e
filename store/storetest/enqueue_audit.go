package storetest

import (
	"testing"

	"github.com/backwave/backwave/store"
)

// testEnqueueAudit holds InsertManyParams.Actor to its doc: "each job it
// inserts is recorded in the audit trail as AuditEnqueue by Actor, in the
// insert's atomic step … A job not inserted … is not recorded as enqueued.
// Empty … records nothing."
func testEnqueueAudit(t *testing.T, s *suite) {
	s.run(t, "OperatorEnqueueIsAudited", func(t *testing.T, e *env) {
		held := e.inserted(whileLive("q", "k"))
		fresh := newJob("q")
		fresh.WireName = "ops.resend"
		res, err := e.s.JobInsertManyResults(e.ctx, store.InsertManyParams{Actor: "ops:ada", Jobs: []store.NewJob{fresh, whileLive("q", "k")}})
		if err != nil {
			t.Fatalf("JobInsertManyResults with an Actor: %v", err)
		}
		if !res[0].Inserted || res[1] != (store.InsertResult{ID: held}) {
			t.Fatalf("results %+v, want the first inserted and the second its key's holder %d", res, held)
		}
		e.insert(newJob("q")) // the application's own enqueue: no Operator Action
		all, err := e.s.AuditList(e.ctx, store.AuditListParams{Limit: 100})
		if err != nil {
			t.Fatalf("AuditList: %v", err)
		}
		var enq []store.AuditEntry
		for _, a := range all {
			if a.Action == store.AuditEnqueue {
				enq = append(enq, a)
			}
		}
		want := store.AuditEntry{Actor: "ops:ada", Action: store.AuditEnqueue, JobID: res[0].ID, Queue: "q", Detail: store.EnqueueDetail("ops.resend")}
		if len(enq) != 1 || enq[0].Actor != want.Actor || enq[0].JobID != want.JobID || enq[0].Queue != want.Queue || enq[0].Detail != want.Detail {
			t.Fatalf("enqueue audit entries %+v, want exactly one like %+v", enq, want)
		}
	})
	s.run(t, "OperatorEnqueueActorChecked", func(t *testing.T, e *env) {
		_, err := e.s.JobInsertManyResults(e.ctx, store.InsertManyParams{Actor: "ops:\x01", Jobs: []store.NewJob{newJob("q")}})
		e.wantErr("JobInsertManyResults with an Actor holding a control character", err, store.ErrInvalidParams)
		if n := len(e.list(store.JobListParams{})); n != 0 {
			t.Fatalf("%d jobs stored by a refused insert, want none", n)
		}
	})
}
