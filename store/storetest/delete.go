package storetest

import (
	"errors"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testDelete holds Operator.JobDelete to its doc: it "removes one terminal
// job ... with everything retention removes beside it ... atomically with
// an audit record ... that outlives it. A live job is
// ErrIllegalTransition ... a job still a Dependency parent of a job the
// store holds ... [is] refused with an error wrapping ErrStillNeeded.
// Either refusal changes nothing and writes no audit record. An unknown
// job is ErrNotFound."
func testDelete(t *testing.T, s *suite) {
	for _, st := range []job.State{job.StateSucceeded, job.StateDeadLettered, job.StateQuarantined, job.StateCancelled} {
		s.run(t, "Removes/"+st.String(), func(t *testing.T, e *env) {
			j := e.inState(st)
			kept := e.insert(newJob(j.Queue))[0]
			got, err := e.s.JobDelete(e.ctx, store.JobDeleteParams{ID: j.ID, Actor: actor})
			if err != nil {
				t.Fatalf("JobDelete of a %s job: %v", st, err)
			}
			if got.ID != j.ID || got.State != st || got.WireName != j.WireName {
				t.Fatalf("JobDelete returned job %d %s %q, want the removed job %d %s %q", got.ID, got.State, got.WireName, j.ID, st, j.WireName)
			}
			_, err = e.s.JobGet(e.ctx, j.ID)
			e.wantErr("JobGet of a deleted job", err, store.ErrNotFound)
			e.wantIDs("jobs of the Queue after the delete", e.list(store.JobListParams{JobFilter: store.JobFilter{Queue: j.Queue}}), []job.ID{kept})
			if counts, err := e.s.JobCountByState(e.ctx, store.CountParams{Queue: j.Queue}); err != nil || counts[st] != 0 {
				t.Fatalf("JobCountByState after the delete: %v, %v; want no %s job", counts, err, st)
			}
			_, err = e.s.JobDelete(e.ctx, store.JobDeleteParams{ID: j.ID, Actor: actor})
			e.wantErr("JobDelete of a deleted job", err, store.ErrNotFound)
			entries := e.audit(store.AuditListParams{JobID: j.ID})
			if len(entries) == 0 {
				t.Fatal("no audit entry for the deleted job")
			}
			want := store.AuditEntry{Actor: actor, Action: store.AuditDelete, JobID: j.ID, Queue: j.Queue, Detail: store.DeleteDetail(j.WireName)}
			if a := entries[0]; a.Actor != want.Actor || a.Action != want.Action || a.JobID != want.JobID || a.Queue != want.Queue || a.Detail != want.Detail {
				t.Fatalf("newest audit entry of the deleted job %+v, want %+v", a, want)
			}
		})
	}
	for _, st := range []job.State{job.StateScheduled, job.StateAwaitingParent, job.StateRunning} {
		s.run(t, "Refuses/"+st.String(), func(t *testing.T, e *env) {
			j := e.inState(st)
			_, err := e.s.JobDelete(e.ctx, store.JobDeleteParams{ID: j.ID, Actor: actor})
			e.wantErr("JobDelete of a "+st.String()+" job", err, store.ErrIllegalTransition)
			e.unchanged(j)
			e.wantNoDelete(j.ID)
		})
	}
	s.run(t, "UnknownJob", func(t *testing.T, e *env) {
		_, err := e.s.JobDelete(e.ctx, store.JobDeleteParams{ID: 4242, Actor: actor})
		e.wantErr("JobDelete of an unknown job", err, store.ErrNotFound)
	})
	s.run(t, "Validates", func(t *testing.T, e *env) {
		_, err := e.s.JobDelete(e.ctx, store.JobDeleteParams{ID: 0, Actor: actor})
		e.wantErr("JobDelete of job 0", err, store.ErrInvalidParams)
	})
	// Retention's rule (Retention.JobPurge): "A job that is still a
	// Dependency parent of a job the store holds is kept: its dependents
	// ... go first".
	s.run(t, "ParentOfHeldJobRefused", func(t *testing.T, e *env) {
		parent := e.inState(job.StateSucceeded)
		dep := e.insert(child(parent.Queue, onAny, store.Existing(parent.ID)))[0]
		parent = e.get(parent.ID)
		_, err := e.s.JobDelete(e.ctx, store.JobDeleteParams{ID: parent.ID, Actor: actor})
		e.wantErr("JobDelete of a parent of a held job", err, store.ErrStillNeeded)
		if errors.Is(err, store.ErrIllegalTransition) {
			t.Fatalf("refusal of a needed parent %v also wraps ErrIllegalTransition", err)
		}
		e.unchanged(parent)
		e.wantNoDelete(parent.ID)
		if err := e.cancel(dep); err != nil {
			t.Fatalf("cancel the dependent: %v", err)
		}
		for _, id := range []job.ID{dep, parent.ID} {
			if _, err := e.s.JobDelete(e.ctx, store.JobDeleteParams{ID: id, Actor: actor}); err != nil {
				t.Fatalf("JobDelete of job %d, dependents first: %v", id, err)
			}
		}
	})
	// A Tag no job left carries leaves Tag Suggest's dictionary, as after a
	// purge.
	s.run(t, "TagLeavesSuggest", func(t *testing.T, e *env) {
		nj := newJob("q")
		nj.Tags = []job.Tag{job.Label("deleteme")}
		id := e.insert(nj)[0]
		if err := e.cancel(id); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.JobDelete(e.ctx, store.JobDeleteParams{ID: id, Actor: actor}); err != nil {
			t.Fatalf("JobDelete: %v", err)
		}
		if tags, err := e.s.TagSuggest(e.ctx, store.TagSuggestParams{Prefix: "deleteme"}); err != nil || len(tags) != 0 {
			t.Fatalf("TagSuggest after the delete = %v, %v; want none", tags, err)
		}
	})
}

// wantNoDelete requires no AuditDelete entry for job id.
func (e *env) wantNoDelete(id job.ID) {
	e.t.Helper()
	for _, a := range e.audit(store.AuditListParams{JobID: id}) {
		if a.Action == store.AuditDelete {
			e.t.Fatalf("a refused JobDelete wrote audit entry %+v", a)
		}
	}
}
